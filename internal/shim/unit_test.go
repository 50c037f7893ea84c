package shim

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseConfigFlagsAndEnv(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	env := map[string]string{"TETHER_GRACE": "3s", "TETHER_IDLE_TIMEOUT": "1m", "TETHER_SHELL": "/env/sh", "TETHER_TTY": "true"}
	cfg, err := ParseConfig([]string{"--shell", "/flag/sh", "--deadline", "90", "--on-stdin-eof", "wait"}, func(k string) string { return env[k] }, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Shell != "/flag/sh" || cfg.Grace != 3*time.Second || cfg.IdleTimeout != time.Minute || !cfg.TTY {
		t.Fatalf("flags/env not applied (flag wins over env): %+v", cfg)
	}
	if !cfg.Deadline.Equal(now.Add(90*time.Second)) || cfg.ExitOnStdinEOF {
		t.Fatalf("deadline %v eof %v", cfg.Deadline, cfg.ExitOnStdinEOF)
	}
	for _, bad := range [][]string{{"--deadline", "soon"}, {"--deadline", "-1"}, {"--on-stdin-eof", "maybe"}, {"--grace", "-1s"}, {"--replay-bytes", "x"}, {"extra-arg"}, {"--created", "yesterday"}} {
		if _, err := ParseConfig(bad, func(string) string { return "" }, io.Discard, now); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := ParseConfig(nil, func(k string) string {
		if k == "TETHER_GRACE" {
			return "forever"
		}
		return ""
	}, io.Discard, now); err == nil || !strings.Contains(err.Error(), "TETHER_GRACE") {
		t.Errorf("bad env value: %v", err)
	}
	var help bytes.Buffer
	ParseConfig([]string{"--help"}, func(string) string { return "" }, &help, now)
	if !strings.Contains(help.String(), "[TETHER_IDLE_TIMEOUT]") {
		t.Errorf("--help does not name the environment variables:\n%s", help.String())
	}
}

func TestReadTTL(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		content string
		ttl     time.Duration
		ok      bool
		err     bool
	}{
		"set":       {"a=\"b\"\ncleaner.kubernetes.gitlab.org/ttl=\"11700\"\n", 11700 * time.Second, true, false},
		"absent":    {"a=\"b\"\n", 0, false, false},
		"zero":      {"cleaner.kubernetes.gitlab.org/ttl=\"0\"\n", 0, true, false},
		"malformed": {"cleaner.kubernetes.gitlab.org/ttl=\"1h\"\n", 0, false, true},
		"negative":  {"cleaner.kubernetes.gitlab.org/ttl=\"-5\"\n", 0, false, true},
		"empty":     {"cleaner.kubernetes.gitlab.org/ttl=\"\"\n", 0, false, true},
	}
	for name, c := range cases {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(c.content), 0o644)
		ttl, ok, err := readTTL(path)
		if ttl != c.ttl || ok != c.ok || (err != nil) != c.err {
			t.Errorf("%s: got %v %v %v", name, ttl, ok, err)
		}
	}
	if _, _, err := readTTL(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
}

func TestMemoryStoreWindow(t *testing.T) {
	m := newMemoryStore(100 * 1024)
	var all []byte
	for i := 0; i < 5000; i++ {
		b := bytes.Repeat([]byte{byte(i)}, 1+i%97)
		all = append(all, b...)
		m.Append(b)
	}
	end := int64(len(all))
	if m.Oldest() != end-100*1024 {
		t.Fatalf("oldest %d, want %d", m.Oldest(), end-100*1024)
	}
	var got bytes.Buffer
	if err := m.CopyRange(&got, m.Oldest()+7, end); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), all[m.Oldest()+7:]) {
		t.Fatal("ring contents differ")
	}
	if err := m.CopyRange(&got, 0, end); err == nil {
		t.Fatal("range before the window: no error")
	}
	small := newMemoryStore(1 << 20)
	small.Append([]byte("abc"))
	if len(small.ring) > 64*1024 {
		t.Fatalf("an idle store allocated %d bytes", len(small.ring))
	}
}

func TestExitCodeOfWaitStatus(t *testing.T) {
	for n := 0; n < 256; n++ {
		if code, sig := exitCode(syscall.WaitStatus(n << 8)); code != n || sig != "" {
			t.Errorf("exit %d → %d %q", n, code, sig)
		}
	}
	if code, sig := exitCode(syscall.WaitStatus(syscall.SIGKILL)); code != 137 || sig != "SIGKILL" {
		t.Errorf("SIGKILL → %d %q", code, sig)
	}
	if name := signalName(syscall.Signal(36)); name != "SIGRTMIN+2" {
		t.Errorf("signal 36 → %q", name)
	}
}
