package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The two builds of tether-stage side by side on the real node: the one
// `make build` ships as bin/tether-stage (the C build when a C compiler
// was found) and the Go build, the reference (bin/tether-stage-go),
// interleaved round by round in the same job: a trivial stage through the
// job's agent, `--version` (the process's start and exit alone, with its
// page faults) and a stage against the stub agent (its own part of a stage
// without the agent's work).

// stageBuild is one build of tether-stage and its measurements.
type stageBuild struct {
	name, bin                    string
	agentStages, versions, stubs durations
	faults                       []int64
}

// stageBuildsTable measures the builds beside j's tether-stage for rounds
// rounds and returns their table, or nil with a note when there is no
// second build to compare with.
func stageBuildsTable(ctx context.Context, j *gitlabJob, stub *stubAgent, rounds int) (*table, string, error) {
	goBin := filepath.Join(filepath.Dir(j.stageBin), "tether-stage-go")
	if _, err := os.Stat(goBin); err != nil {
		return nil, "tether-stage's builds not compared: no " + goBin + " (make build)", nil
	}
	if _, err := buildinfo.ReadFile(j.stageBin); err == nil {
		return nil, "tether-stage's builds not compared: " + j.stageBin + " is the Go build (no C compiler when it was built)", nil
	}
	builds := []*stageBuild{{name: "C", bin: j.stageBin}, {name: "Go", bin: goBin}}
	for range rounds {
		for _, b := range builds {
			g := *j
			g.stageBin = b.bin
			out, d, err := g.stage(ctx, "step_script", "true", true)
			if err != nil {
				return nil, "", fmt.Errorf("trivial stage through the agent (%s tether-stage): %w\n%s", b.name, err, tailOf([]byte(out), 600))
			}
			b.agentStages = append(b.agentStages, d)
			d, faults, err := versionFaults(ctx, b.bin)
			if err != nil {
				return nil, "", err
			}
			b.versions, b.faults = append(b.versions, d), append(b.faults, faults)
			if d, err = stub.run(ctx, b.bin); err != nil {
				return nil, "", err
			}
			b.stubs = append(b.stubs, d)
		}
	}
	t := &table{head: []string{fmt.Sprintf("tether-stage's builds, interleaved (%d rounds)", rounds), builds[0].name + " (bin/tether-stage)", builds[1].name + " (bin/tether-stage-go)"}}
	row := func(what string, f func(b *stageBuild) string) {
		t.add(what, f(builds[0]), f(builds[1]))
	}
	stat := func(d durations) string {
		return fmt.Sprintf("median %s, p90 %s, min %s", ms(d.median()), ms(d.percentile(90)), ms(d.min()))
	}
	row("trivial stage (`true`) through the job's agent, start → exit", func(b *stageBuild) string { return stat(b.agentStages) })
	row("`tether-stage --version`, start → exit", func(b *stageBuild) string { return stat(b.versions) })
	row("`tether-stage --version`: page faults (getrusage, median)", func(b *stageBuild) string { return fmt.Sprint(medianInt(b.faults)) })
	row("against the stub agent (start, connect, request, relay, exit)", func(b *stageBuild) string { return stat(b.stubs) })
	row("of which beyond its start (medians' difference)", func(b *stageBuild) string { return ms(b.stubs.median() - b.versions.median()) })
	return t, "", nil
}

// versionFaults runs `bin --version` and returns how long the process
// took, start to exit, and its page faults.
func versionFaults(ctx context.Context, bin string) (time.Duration, int64, error) {
	cmd := exec.CommandContext(ctx, bin, "--version")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%s --version: %w: %s", bin, err, tailOf([]byte(stderr.String()), 600))
	}
	d := time.Since(start)
	var faults int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		faults = ru.Minflt + ru.Majflt
	}
	return d, faults, nil
}

func medianInt(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
