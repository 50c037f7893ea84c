package shim

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// activityHarness is a harness whose fake clock starts at the real time,
// with an activity file: marks are writes, which the kernel stamps with
// the real time, and a peer shim's marks are set by the test (Chtimes).
func activityHarness(t *testing.T, idle time.Duration) (*harness, string) {
	t.Helper()
	return activityHarnessAt(t, filepath.Join(t.TempDir(), "activity"), idle)
}

func activityHarnessAt(t *testing.T, file string, idle time.Duration) (*harness, string) {
	t.Helper()
	cfg := testConfig()
	start := time.Now()
	cfg.Start, cfg.IdleTimeout, cfg.ActivityFile = start, idle, file
	tr := &transcript{}
	log := slog.New(slog.DiscardHandler)
	em := newEmitter(&recordWriter{t: t, tr: tr}, newMemoryStore(1<<20), log)
	st := &fakeStarter{tr: tr, procs: map[string]*fakeProc{}}
	h := &harness{t: t, st: st, tr: tr, now: start}
	h.e = newEngine(cfg, log, em, st, fileSink{}, &masks{}, start)
	t.Cleanup(h.e.act.close)
	h.step()
	return h, file
}

// setMtime stands for a mark by another shim of the pod (or, in the past,
// for a file nobody marked since).
func setMtime(t *testing.T, file string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(file, at, at); err != nil {
		t.Fatal(err)
	}
}

func mtime(t *testing.T, file string) time.Time {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// A peer's mark keeps an idle shim alive: the idle timeout counts from
// the later of its own activity and the file's time.
func TestActivityFileKeepsAnIdleShimAlive(t *testing.T) {
	const idle = 30 * time.Second
	h, file := activityHarness(t, idle)
	start := h.now
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatalf("the shim did not create its activity file: %v", err)
	}
	if fi.Mode().Perm() != 0o666 {
		t.Fatalf("activity file mode %v, want 0666 (the pod's shims may run as different users)", fi.Mode().Perm())
	}
	setMtime(t, file, start.Add(20*time.Second))
	wait(idle)(h)
	if h.ended {
		t.Fatalf("the shim ended on its own idle clock although another shim was active 10s ago: %q", h.tr.all())
	}
	if next := h.now.Add(h.e.nextWake(h.now)); !next.Equal(start.Add(20*time.Second + idle)) {
		t.Fatalf("next wake at start+%v, want start+%v (the peer's mark + the idle timeout)", next.Sub(start), 20*time.Second+idle)
	}
	wait(20*time.Second - time.Millisecond)(h)
	if h.ended {
		t.Fatal("the shim ended before the peer's mark + the idle timeout")
	}
	wait(time.Millisecond)(h)
	if !h.ended || h.code != 125 {
		t.Fatalf("the shim did not end on idle: ended %v code %d %q", h.ended, h.code, h.tr.all())
	}
	last := h.tr.all()[len(h.tr.all())-1]
	if !strings.Contains(last, "exit idle 125") || !strings.Contains(last, "no activity in the pod's other containers") {
		t.Fatalf("final record %q", last)
	}
}

// A shim marks the file when a client reaches it and, while it has work,
// once every quarter of the idle timeout; never merely by starting.
func TestActivityFileMarks(t *testing.T) {
	const idle = 40 * time.Second
	long := time.Now().Add(-time.Hour)
	file := filepath.Join(t.TempDir(), "activity")
	if err := os.WriteFile(file, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	setMtime(t, file, long)
	// A shim starting with the file in place (a restarted sidecar) does
	// not mark it: it must not keep the pod alive by restarting.
	log := slog.New(slog.DiscardHandler)
	a := newActivity(file, idle, log)
	defer a.close()
	if got := mtime(t, file); !got.Equal(long) {
		t.Fatalf("opening the file changed its time to %v", got)
	}

	h, file := activityHarness(t, idle)
	setMtime(t, file, long)
	send(jobCmd("j", []string{"/m1"}, nil))(h)
	if got := mtime(t, file); !got.After(long) {
		t.Fatal("a job command did not mark the file")
	}
	setMtime(t, file, long)
	if next := h.e.nextWake(h.now); next != idle/4 {
		t.Fatalf("a busy shim wakes after %v, want %v to mark the file", next, idle/4)
	}
	wait(idle/4 - time.Second)(h)
	if got := mtime(t, file); !got.Equal(long) {
		t.Fatal("a busy shim marked the file before a quarter of the idle timeout passed")
	}
	wait(time.Second)(h)
	if got := mtime(t, file); !got.After(long) {
		t.Fatal("a busy shim did not mark the file after a quarter of the idle timeout")
	}
	wait(time.Hour)(h)
	wait(2 * time.Second)(h)
	setMtime(t, file, long)
	exits("/m1", 0)(h)
	if got := mtime(t, file); !got.After(long) {
		t.Fatal("the script's end did not mark the file")
	}
	if h.ended {
		t.Fatal("the shim ended while its script ran")
	}
}

func TestActivityEvery(t *testing.T) {
	for _, c := range []struct{ idle, want time.Duration }{
		{0, 30 * time.Second},
		{2 * time.Second, time.Second},
		{20 * time.Second, 5 * time.Second},
		{8 * time.Minute, 30 * time.Second},
	} {
		if got := activityEvery(c.idle); got != c.want {
			t.Errorf("activityEvery(%v) = %v, want %v", c.idle, got, c.want)
		}
	}
}

// A file that cannot be opened leaves the shim with its own clock.
func TestActivityFileUnusable(t *testing.T) {
	h, _ := activityHarnessAt(t, filepath.Join(t.TempDir(), "missing-dir", "activity"), 30*time.Second)
	wait(30 * time.Second)(h)
	if !h.ended || h.code != 125 {
		t.Fatalf("without a usable activity file the shim did not end on its own idle clock: %q", h.tr.all())
	}
}
