package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tether run's stdout is the job's bytes exactly; its stderr lines never
// land inside one of the job's lines where both show on one screen (here
// one pipe for both, as a terminal or 2>&1): a progress line written while
// the job's line is open waits for its newline, and those after a job
// whose last line has none start on a new line.
func TestRunNoticesNeverSplitAJobLine(t *testing.T) {
	dir := t.TempDir()
	// b.sh's start is logged while a.sh's "abc" waits for its newline.
	writeScript(t, dir, "a.sh", "printf abc\n")
	writeScript(t, dir, "b.sh", "echo def\nprintf xyz\n")
	cmd := exec.Command(filepath.Join(binDir, "tether"), "run", "--local", "a.sh", "b.sh")
	cmd.Dir = dir
	var merged bytes.Buffer
	cmd.Stdout, cmd.Stderr = &merged, &merged // one pipe
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, merged.String())
	}
	got := merged.String()
	record := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} level=|^time=`)
	var job strings.Builder
	for _, line := range strings.SplitAfter(got, "\n") {
		if line == "" {
			continue
		}
		if record.MatchString(line) {
			continue
		}
		if strings.Contains(line, "level=") {
			t.Fatalf("a log record inside a line of the job's output: %q\nall:\n%s", line, got)
		}
		job.WriteString(line)
	}
	// The job's bytes, plus the one newline tether wrote on stderr after
	// its last line.
	if job.String() != "abcdef\nxyz\n" || !strings.Contains(got, `msg="script started" script=`+filepath.Join(dir, "b.sh")) {
		t.Fatalf("the job's lines %q; all:\n%s", job.String(), got)
	}

	// Apart, stdout is the job's bytes exactly and stderr gets no newline
	// of tether's before its lines.
	stdout, stderr, code := tether(t, dir, "run", "--local", "a.sh", "b.sh")
	if code != 0 || string(stdout) != "abcdef\nxyz" || !record.Match(stderr) {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}
