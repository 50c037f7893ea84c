package shim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// A job's argv runs as a program, without a shell or a script file: each
// argument arrives as it is (spaces, quotes, an empty one), the program is
// found on PATH, its exit code is the job's, and the after-scripts follow.
func TestJobArgv(t *testing.T) {
	dir := t.TempDir()
	after := script(t, dir, "after.sh", "echo after\n")
	p := startShim(t, nil)
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "a", After: []string{after},
		Argv: []string{"sh", "-c", `printf '[%s]' "$@"; echo; exit 5`, "zero", "two words", `"quoted"`, ""}},
		protocol.Command{Cmd: protocol.CmdExit})
	code, x := p.waitExit(10 * time.Second)
	if code != 5 || x.Reason != protocol.ReasonExitCommand {
		t.Fatalf("exit %d %+v, want the program's 5", code, x)
	}
	if want := "[two words][\"quoted\"][]\nafter\n"; string(p.output()) != want {
		t.Fatalf("output %q, want %q", p.output(), want)
	}
	if st := p.waitStatus("sh", time.Second); st.CommandExitCode != 5 {
		t.Fatalf("status %+v", st)
	}

	// A program that is not there: 127, naming it; a relative path with a
	// slash is taken from the working directory as it is.
	q := startShim(t, nil)
	q.send(protocol.Command{Cmd: protocol.CmdJob, ID: "m", Argv: []string{"no-such-program-here", "x"}},
		protocol.Command{Cmd: protocol.CmdExit})
	if code, _ := q.waitExit(10 * time.Second); code != 127 {
		t.Fatalf("missing program: exit %d, want 127", code)
	}
	if st := q.waitStatus("no-such-program-here", time.Second); !strings.Contains(st.Error, "no-such-program-here") {
		t.Fatalf("status %+v does not name the program", st)
	}
}
