package shim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// A job's deadline_ms sets the shim's deadline from the job's arrival (a
// warm pod idled before it): the deadline then acts as --deadline does.
func TestEngineJobDeadline(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	wait(10 * time.Minute)(h) // the pod idled: its start must not count
	c := jobCmd("j", []string{"/m1"}, []string{"/a1"})
	c.DeadlineMS = 10_000
	send(c)(h)
	wait(9 * time.Second)(h)
	if got := h.tr.all(); !slices.Equal(got, []string{"begin /m1 script j"}) {
		t.Fatalf("before the job's deadline: %q", got)
	}
	wait(time.Second)(h)
	exits("/m1", 143)(h)
	exits("/a1", 0)(h)
	deadline := `"job deadline 2026-03-04T05:16:17Z reached"`
	want := []string{"begin /m1 script j", "signal TERM /m1", "status /m1 script j 143 " + deadline,
		"begin /a1 after j", `status /a1 after j 0 ""`, "exit deadline 124 " + deadline}
	if got := h.tr.all(); !slices.Equal(got, want) || !h.ended || h.code != 124 {
		t.Fatalf("transcript %q (ended %v, code %d), want %q and code 124", got, h.ended, h.code, want)
	}
}

// A resent job (same ID) does not move the deadline.
func TestEngineJobDeadlineResent(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	c := jobCmd("j", []string{"/m1"}, nil)
	c.DeadlineMS = 10_000
	send(c)(h)
	wait(8 * time.Second)(h)
	send(c)(h)
	wait(2 * time.Second)(h)
	if got := h.tr.all(); !slices.Contains(got, "signal TERM /m1") {
		t.Fatalf("the resent job moved the deadline: %q", got)
	}
}

// A job's ttl_ms replaces the pod's TTL annotation (which counts from the
// pod's creation, long before a warm pod's job).
func TestEngineJobTTL(t *testing.T) {
	file := filepath.Join(t.TempDir(), "annotations")
	if err := os.WriteFile(file, []byte(TTLAnnotation+"=\"60\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.TTLFile = file
	h := newHarness(t, cfg, nil)
	wait(50 * time.Second)(h)
	c := jobCmd("j", []string{"/m1"}, nil)
	c.TTLMS = 120_000
	send(c)(h)
	wait(30 * time.Second)(h) // past the annotation's 60 s
	if got := h.tr.all(); !slices.Equal(got, []string{"begin /m1 script j"}) {
		t.Fatalf("the annotation's TTL still applied: %q", got)
	}
	wait(90 * time.Second)(h)
	if got := h.tr.all(); !slices.Contains(got, "signal TERM /m1") {
		t.Fatalf("the job's TTL did not apply: %q", got)
	}
}

// The job's variables file reaches the scripts' start, and a file that is
// missing fails the script without quoting anything.
func TestEngineJobEnvFile(t *testing.T) {
	dir := t.TempDir()
	data, err := protocol.EncodeEnvFile(map[string]string{"TOKEN": "s3cret=x\ny", "CI": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env-1"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, testConfig(), nil)
	h.e.files = fileSink{dir: dir}
	var envs [][]string
	h.e.starter = recordEnv{h.st, &envs}
	c := jobCmd("j", []string{"/m1", "/m2"}, nil)
	c.EnvFile = filepath.Join(dir, ".env-1")
	send(c)(h)
	exits("/m1", 0)(h)
	exits("/m2", 0)(h)
	want := []string{"CI=true", "TOKEN=s3cret=x\ny"}
	if len(envs) != 2 || !slices.Equal(envs[0], want) || !slices.Equal(envs[1], want) {
		t.Fatalf("scripts' env %q, want %q for each", envs, want)
	}
	c = jobCmd("k", []string{"/m3"}, nil)
	c.EnvFile = filepath.Join(dir, ".env-missing")
	send(c)(h)
	got := h.tr.all()
	if last := got[len(got)-2]; !strings.Contains(last, "status /m3 script k 126") || !strings.Contains(last, "variables file") {
		t.Fatalf("missing variables file: %q", got)
	}
}

// recordEnv is a starter that records each script's extra environment.
type recordEnv struct {
	*fakeStarter
	envs *[][]string
}

func (r recordEnv) start(sc scriptStart) (proc, error) {
	*r.envs = append(*r.envs, sc.env)
	return r.fakeStarter.start(sc)
}

func TestWithEnv(t *testing.T) {
	got := withEnv([]string{"PATH=/bin", "A=1", "B=2"}, []string{"A=x", "C=3"})
	if want := []string{"PATH=/bin", "B=2", "A=x", "C=3"}; !slices.Equal(got, want) {
		t.Fatalf("withEnv = %q, want %q", got, want)
	}
}
