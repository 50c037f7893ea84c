package actionsrunner

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseEnvFile(t *testing.T) {
	got, err := parseEnvFile("A=1\nB=x=y\n\nC<<EOF\nline 1\nline 2\nEOF\nD<<X\nX\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "x=y", "C": "line 1\nline 2", "D": ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"novalue\n", "E<<EOF\nno end\n", "<<EOF\nEOF\n"} {
		if _, err := parseEnvFile(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The stand-in starts the launcher with bash -e, hands it one line on a
// stdin that then ends, reads the response and keeps its state; a cancel
// reaches the hook as SIGINT first.
func TestInvokeAndCancel(t *testing.T) {
	script := `in=$(cat)
printf '%s' "$in" > "$RUNNER_TEMP/input"
resp=$(printf '%s' "$in" | sed 's/.*"responseFile":"\([^"]*\)".*/\1/')
case $in in
  *prepare_job*) printf '{"State":{"pod":"p1"},"ISALPINE":false,"context":{"services":[]}}' > "$resp" ;;
  *cleanup_job*) trap 'echo got-int; exit 9' INT; echo waiting; sleep 30 >/dev/null 2>&1 & wait ;;
esac
`
	r := scriptedRunner(t, script)
	ctx := context.Background()
	res, err := r.PrepareJob(ctx, "busybox", nil, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare: %v, %+v", err, res)
	}
	if string(r.State) != `{"pod":"p1"}` {
		t.Fatalf("state %s", r.State)
	}
	in, err := os.ReadFile(filepath.Join(r.Temp, "input"))
	if err != nil || !strings.Contains(string(in), `"state":null`) || !strings.Contains(string(in), `"HOME":"/github/home"`) {
		t.Fatalf("input %s (%v)", in, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(time.Second, cancel)
	res, err = r.CleanupJob(cctx)
	if err != nil || res.ExitCode != 9 || !strings.Contains(string(res.Stdout), "got-int") {
		t.Fatalf("cancel: %v, %d, %q", err, res.ExitCode, res.Stdout)
	}
	in, _ = os.ReadFile(filepath.Join(r.Temp, "input"))
	if !strings.Contains(string(in), `"state":{"pod":"p1"}`) {
		t.Fatalf("cleanup input %s lacks the state", in)
	}
}

// scriptedRunner is a Runner whose hook (the launcher) is script, run
// as the runner runs a .sh hook.
func scriptedRunner(t *testing.T, script string) *Runner {
	t.Helper()
	dir := t.TempDir()
	launcher := filepath.Join(dir, "hook.sh")
	if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := New(filepath.Join(dir, "runner"), launcher, "repo", os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	return r
}
