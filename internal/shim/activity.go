package shim

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// activity is the file the shims of one pod share (Config.ActivityFile)
// so that each one's idle clock also counts the others' work. A pod with
// a second shim (the GitLab driver's helper container) runs some stages in
// one container while the other container's shim hears nothing, maybe for
// many minutes (a large artifact upload): without the shared clock, that
// shim would end on its idle timeout, and the pod with it, mid-stage.
//
// A shim marks the file (its modification time) when a client reaches it
// (a command, a ping, a resume), when a script ends, and periodically
// while it has work; its idle timeout then counts from the later of its
// own last activity and the file's modification time. Starting is not
// activity: a shim restarted by the kubelet (a native sidecar that ended
// on its own idle timeout) must not keep its pod alive by starting.
//
// The file is written, not given a time: the kernel sets the modification
// time to the current time on a write, which any user that may write the
// file can do, so shims running as different users share it (a time given
// explicitly needs the file's owner). The file is created with mode 0666
// for the same reason. Only the engine's goroutine uses it.
type activity struct {
	path string
	// every is how often a busy shim marks the file.
	every time.Duration
	log   *slog.Logger
	f     *os.File // nil: not opened (yet), or it cannot be
	// marked is when this shim last marked the file (zero: never).
	marked time.Time
	// seen is the latest modification time read from the file.
	seen time.Time
	// failed is set once a failure was logged: it is logged once.
	failed bool
}

// activityGap is the shortest time between two marks of a client's
// activity: commands come in bursts (a job's file, mask and job commands),
// and one write covers a burst.
const activityGap = time.Second

// activityEvery is how often a busy shim marks the file for an idle timeout
// of idle: a quarter of it, between a second and 30 seconds, so a busy
// shim's mark is never older than a quarter of its peers' idle timeout
// (the shims of a pod are given the same one).
func activityEvery(idle time.Duration) time.Duration {
	if idle <= 0 {
		return 30 * time.Second
	}
	return min(max(idle/4, activityGap), 30*time.Second)
}

// newActivity opens path, creating it if missing; "" gives an activity
// that does nothing. A file that cannot be opened is logged and then
// ignored: the idle timeout counts this shim's own activity only.
func newActivity(path string, idle time.Duration, log *slog.Logger) *activity {
	a := &activity{path: path, every: activityEvery(idle), log: log}
	if path == "" {
		return a
	}
	// O_CREATE does not change an existing file's times: opening is not
	// activity.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		a.fail(fmt.Errorf("opening the activity file: %w", err))
		return a
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm() != 0o666 {
		// The umask narrowed the mode; only the owner can widen it, and
		// an owner that is another user set it already.
		_ = f.Chmod(0o666)
	}
	a.f = f
	return a
}

// mark records activity at now in the file, unless this shim marked it
// less than activityGap ago.
func (a *activity) mark(now time.Time) {
	if a.f == nil || (!a.marked.IsZero() && now.Sub(a.marked) < activityGap) {
		return
	}
	a.marked = now
	if _, err := a.f.WriteAt([]byte{'\n'}, 0); err != nil {
		a.fail(fmt.Errorf("marking the activity file: %w", err))
	}
}

// markDue marks the file when this shim has work and its last mark is
// every old.
func (a *activity) markDue(now time.Time) {
	if a.f != nil && (a.marked.IsZero() || now.Sub(a.marked) >= a.every) {
		a.mark(now)
	}
}

// nextMark is when a busy shim marks the file next (zero: never; now:
// it never marked it).
func (a *activity) nextMark(now time.Time) time.Time {
	switch {
	case a.f == nil:
		return time.Time{}
	case a.marked.IsZero():
		return now
	}
	return a.marked.Add(a.every)
}

// latest reads the file's modification time and returns the latest one
// seen (zero without a file). A file that vanished counts as no activity.
func (a *activity) latest() time.Time {
	if a.path == "" {
		return time.Time{}
	}
	fi, err := os.Stat(a.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		a.fail(fmt.Errorf("reading the activity file: %w", err))
	case fi.ModTime().After(a.seen):
		a.seen = fi.ModTime()
	}
	return a.seen
}

// close closes the file; the file stays for the other shims.
func (a *activity) close() {
	if a.f != nil {
		a.f.Close()
		a.f = nil
	}
}

func (a *activity) fail(err error) {
	if !a.failed {
		a.failed = true
		a.log.Warn("the pod's activity file does not work; the idle timeout counts this shim's own activity only", "file", a.path, "err", err)
	}
}
