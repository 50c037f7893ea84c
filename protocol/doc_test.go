package protocol

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
)

// PROTOCOL.md quotes a sample job's record stream and example commands;
// these tests keep those quotes true to the code. Regenerate the sample
// with `go test ./protocol -run TestSampleJob -update` after a deliberate
// wire change, and paste testdata/sample-job.records into PROTOCOL.md.

var update = flag.Bool("update", false, "rewrite testdata/sample-job.records")

// sampleJob encodes the stream a shim writes for a small job: hello, a
// failing main script, an after-script, the job record, and the final
// record after the client's exit command.
func sampleJob(t *testing.T) []byte {
	enc := NewEncoder()
	var out []byte
	add := func(typ Type, v any) {
		t.Helper()
		var err error
		if out, err = enc.AppendJSON(out, typ, v); err != nil {
			t.Fatal(err)
		}
	}
	add(TypeHello, Hello{Protocol: Version, Shim: "v0.1.0", MaxRecord: MaxRecord, PID: 1, Shell: "/bin/bash", Replay: "file"})
	add(TypeBegin, Begin{Script: "/tether/scripts/step_script", Phase: "script", Job: "build-42"})
	out = enc.AppendOutput(out, []byte("$ make test\n"))
	out = enc.AppendBlocks(out, []byte("cc -c a.c\ncc -c b.c\n"))
	out = enc.AppendOutput(out, []byte("Downloading  10%\rDownloading  60%\rDownloading 100%\n"))
	out = enc.AppendOutput(out, []byte("\x1b[32mok\x1b[0m  \texample.com/app\t0.412s\n"))
	out = enc.AppendOutput(out, []byte("copying C:\\temp\\build.zip: caf\xe9 \xff\xfe\x00 ✓\n"))
	out = enc.AppendOutput(out, []byte(`s 0 {"command_exit_code":0,"script":"forged"}`+"\n"))
	out = enc.AppendOutput(out, []byte("waiting"))
	out = enc.AppendOutput(out, []byte("..."))
	out = enc.AppendOutput(out, []byte(" done\nmake: *** [test] Error 2\n"))
	add(TypeStatus, Status{Script: "/tether/scripts/step_script", CommandExitCode: 2, DurationMS: 1234, Phase: "script", Job: "build-42"})
	add(TypeBegin, Begin{Script: "/tether/scripts/after_script", Phase: "after", Job: "build-42"})
	out = enc.AppendOutput(out, []byte("cleaning up\n"))
	add(TypeStatus, Status{Script: "/tether/scripts/after_script", CommandExitCode: 0, DurationMS: 8, Phase: "after", Job: "build-42"})
	add(TypeJob, JobDone{ExitCode: 2, FailedScript: "/tether/scripts/step_script", Job: "build-42"})
	var err error
	if out, err = AppendUnsequenced(out, TypeAlive, Alive{Nonce: "c0ffee", State: "idle", End: enc.Offset()}); err != nil {
		t.Fatal(err)
	}
	add(TypeExit, Exit{Reason: ReasonExitCommand, ExitCode: 2, Message: "all queued work is done"})
	return out
}

func TestSampleJob(t *testing.T) {
	got := sampleJob(t)
	const golden = "testdata/sample-job.records"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the sample job encodes differently from %s (first difference at byte %d); if the wire format changed on purpose, run with -update and update PROTOCOL.md", golden, firstDiff(got, want))
	}
	checkStream(t, got, 0)

	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	block := between(t, string(doc), "<!-- sample-job:begin -->\n```\n", "```\n<!-- sample-job:end -->")
	// The document shows ESC and TAB visibly; everything else is verbatim.
	shown := strings.NewReplacer("\x1b", "␛", "\t", "→").Replace(string(got))
	if block != shown {
		t.Fatalf("PROTOCOL.md's sample job differs from the encoder's output; it should read:\n%s", shown)
	}
}

func TestDocCommandExamples(t *testing.T) {
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	block := between(t, string(doc), "<!-- commands:begin -->\n```\n", "```\n<!-- commands:end -->")
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	if len(lines) < 7 {
		t.Fatalf("only %d example commands", len(lines))
	}
	kinds := map[CommandKind]bool{}
	for _, line := range lines {
		// The document writes the Reset byte as ␘.
		wire := strings.ReplaceAll(line, "␘", "\x18") + "\n"
		c, err := NewCommandReader(strings.NewReader(wire)).Next()
		if err != nil {
			t.Errorf("example %q: %v", line, err)
			continue
		}
		kinds[c.Cmd] = true
		// Examples are written the way AppendCommand writes them.
		again, err := AppendCommand(nil, c)
		if err != nil || string(again) != wire {
			t.Errorf("example %q: AppendCommand writes %q (%v)", line, again, err)
		}
	}
	for _, k := range []CommandKind{CmdRun, CmdJob, CmdCancel, CmdPing, CmdResume, CmdExit} {
		if !kinds[k] {
			t.Errorf("no example of the %s command", k)
		}
	}
}

func TestDocMentionsEveryTypeAndReason(t *testing.T) {
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range "hopdbsjexra" {
		if !strings.Contains(string(doc), "| `"+string(typ)+"` |") {
			t.Errorf("PROTOCOL.md has no table row for record type %c", typ)
		}
	}
	for _, r := range []string{ReasonExitCommand, ReasonStdinEOF, ReasonDeadline, ReasonTTL, ReasonIdle, ReasonSignal, ReasonFatal} {
		if !strings.Contains(string(doc), "`"+r+"`") {
			t.Errorf("PROTOCOL.md does not mention exit reason %s", r)
		}
	}
	// Every JSON field name of every payload is documented.
	for _, v := range []any{Hello{}, Begin{}, Status{}, JobDone{}, ErrorRecord{}, Exit{}, Resumed{}, Alive{}, Command{}} {
		b, _ := json.Marshal(v)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		for k := range m {
			if !strings.Contains(string(doc), "`"+k+"`") {
				t.Errorf("PROTOCOL.md does not mention field %s of %T", k, v)
			}
		}
	}
}

func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("PROTOCOL.md has no %q", start)
	}
	s = s[i+len(start):]
	j := strings.Index(s, end)
	if j < 0 {
		t.Fatalf("PROTOCOL.md has no %q", end)
	}
	return s[:j]
}

// The hello's command_aliases example in PROTOCOL.md is what the encoder
// writes, and every field of an alias is documented.
func TestDocCommandAliases(t *testing.T) {
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	h := Hello{Protocol: Version, Shim: "v0.1.0", MaxRecord: MaxRecord, PID: 1, Shell: "/bin/sh", Replay: "file",
		CommandAliases: []CommandAlias{{Name: "gitlab-runner", Target: "gitlab-runner-helper", Path: "/usr/bin/gitlab-runner-helper", Linked: true}}}
	line, err := NewEncoder().AppendJSON(nil, TypeHello, h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), string(line)) {
		t.Errorf("PROTOCOL.md does not quote the hello with command_aliases as encoded:\n%s", line)
	}
	b, _ := json.Marshal(CommandAlias{Name: "n", Target: "t", Path: "/p", Linked: true, Error: "e"})
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if len(m) != 5 {
		t.Fatalf("CommandAlias marshals %d fields, want 5: %s", len(m), b)
	}
	for k := range m {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("PROTOCOL.md does not mention field %s of CommandAlias", k)
		}
	}
}
