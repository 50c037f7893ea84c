package shim_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// Two shims share an activity file, as the build and helper containers of
// a pod do: while one runs a script longer than the other's idle timeout,
// the idle one stays; once both are idle, it ends an idle timeout after
// the script's end. The busy one runs as another user (a helper image's
// user is not the build image's): its marks still count. Both have the
// same idle timeout, as in a pod: a busy shim marks the file once every
// quarter of it (here every second).
func TestActivityFileSharesTheIdleClock(t *testing.T) {
	const (
		idle = 3 * time.Second
		work = 6 * time.Second
	)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "activity")
	s := script(t, dir, "upload.sh", "sleep 6; echo uploaded\n")

	idleShim := startShim(t, []string{"--idle-timeout", idle.String(), "--activity-file", file})
	idleShim.waitRecord(0, 30*time.Second, ofType(protocol.TypeHello)) // it created the file
	busy := startShim(t, []string{"--idle-timeout", idle.String(), "--activity-file", file}, asUser(65534, 65534))
	sent := time.Now()
	busy.send(run(s))

	st := busy.waitStatus(s, 60*time.Second)
	if st.CommandExitCode != 0 {
		t.Fatalf("the busy shim's script: %+v", st)
	}
	// The script started after sent and ran for work: the idle shim must
	// not end before sent + work + idle (without the file it ends after
	// idle).
	code, x := idleShim.waitExit(60 * time.Second)
	notBefore(t, sent.Add(work+idle), time.Now())
	if code != 125 || x.Reason != protocol.ReasonIdle {
		t.Fatalf("the idle shim: exit %d %+v, want 125 idle", code, x)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o666 {
		t.Fatalf("activity file mode %v, want 0666", fi.Mode().Perm())
	}
}
