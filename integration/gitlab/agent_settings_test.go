package gitlab

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The agent keeps a stage's settings for the job's next stage with the
// same other arguments and the same config file, and parses them again
// when the arguments, $TETHER_CONFIG or the file changed, or when a flag
// took the script as its value.
func TestAgentKeepsStageSettings(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "tether.yaml")
	old := time.Now().Add(-time.Minute)
	write := func(ns string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(conf, []byte("namespace: "+ns+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(conf, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write("ci1", old)
	vars := map[string]string{"TETHER_CONFIG": conf}
	env := func(k string) string { return vars[k] }
	a := &agent{}
	parse := func(args ...string) (string, []string) {
		t.Helper()
		var cfg Settings
		pos, err := a.parse(&cfg, args, env)
		if err != nil {
			t.Fatalf("parse %q: %v", args, err)
		}
		return cfg.Namespace, pos
	}
	if ns, pos := parse("/s/prepare_script", "prepare_script"); ns != "ci1" || len(pos) != 2 || pos[1] != "prepare_script" {
		t.Fatalf("first stage: %q %q", ns, pos)
	}
	// Same size and time, other content: the kept settings are used.
	write("ci2", old)
	if ns, pos := parse("/s/step_script", "step_script"); ns != "ci1" || pos[0] != "/s/step_script" || pos[1] != "step_script" {
		t.Fatalf("next stage: %q %q, want the kept settings", ns, pos)
	}
	// The file changed: read again.
	write("ci3", old.Add(time.Second))
	if ns, _ := parse("/s/step_script", "step_script"); ns != "ci3" {
		t.Fatalf("after the config changed: %q", ns)
	}
	// Other arguments: parsed again.
	if ns, _ := parse("--namespace", "x", "/s/step_script", "step_script"); ns != "x" {
		t.Fatalf("with --namespace: %q", ns)
	}
	// Another config file.
	other := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(other, []byte("namespace: o\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other, old, old); err != nil {
		t.Fatal(err)
	}
	vars["TETHER_CONFIG"] = other
	if ns, _ := parse("/s/step_script", "step_script"); ns != "o" {
		t.Fatalf("with another $TETHER_CONFIG: %q", ns)
	}
	// A flag that takes the next argument as its value: never kept.
	var cfg Settings
	if pos, err := a.parse(&cfg, []string{"/s/x", "--namespace", "/s/step_script", "step_script"}, env); err != nil || len(pos) != 2 || pos[0] != "/s/x" {
		t.Fatalf("flag before the script: %q %v", pos, err)
	}
	if a.parsed != nil {
		t.Fatal("settings kept whose last two arguments were not the positional ones")
	}
	// A config file written just now may be written still: not kept.
	write("ci4", time.Now())
	vars["TETHER_CONFIG"] = conf
	if ns, _ := parse("/s/step_script", "step_script"); ns != "ci4" || a.parsed != nil {
		t.Fatalf("fresh config: %q, kept %v", ns, a.parsed != nil)
	}
}
