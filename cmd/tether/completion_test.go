package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBashCompletion: bash accepts the script, and it completes
// subcommands, flags and shorthands from the commands' own FlagSets.
func TestBashCompletion(t *testing.T) {
	dir := t.TempDir()
	script, _, code := tether(t, dir, "completion", "bash")
	if code != 0 {
		t.Fatalf("completion bash: exit %d", code)
	}
	path := filepath.Join(dir, "tether.bash")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n rejects the script: %v\n%s", err, out)
	}
	for _, c := range []struct{ words, want string }{
		{"tether r", "run"},
		{"tether comp", "completion"},
		{"tether completion z", "zsh"},
		{"tether run --nam", "--namespace"},
		{"tether run --read", "--read-only-root"},
		{"kubectl-tether gc --all", "--all-namespaces"},
		{"tether attach -", "-n"},
		{"tether gitlab p", "prepare"},
		{"tether gitlab --config x.yaml c", "cleanup"},
		{"tether gitlab prepare --gitlab-helper-i", "--gitlab-helper-image"},
		{"tether gitlab run --nam", "--namespace"},
	} {
		prog := `source "$1"; COMP_WORDS=(` + c.words + `); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tether; printf '%s\n' "${COMPREPLY[@]}"; complete -p tether kubectl-tether >/dev/null`
		out, err := exec.Command("bash", "-c", prog, "bash", path).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.words, err, out)
		}
		if !strings.Contains("\n"+string(out), "\n"+c.want+"\n") {
			t.Errorf("completing %q offers %q, want %s", c.words, out, c.want)
		}
	}
}

// TestZshAndFishCompletion: the other shells' scripts carry the flags.
func TestZshAndFishCompletion(t *testing.T) {
	dir := t.TempDir()
	zsh, _, code := tether(t, dir, "completion", "zsh")
	if code != 0 || !strings.HasPrefix(string(zsh), "#compdef tether") || !strings.Contains(string(zsh), "--namespace") {
		t.Errorf("completion zsh: exit %d\n%s", code, zsh)
	}
	fish, _, code := tether(t, dir, "completion", "fish")
	if code != 0 || !strings.Contains(string(fish), "complete -c tether -n '__fish_seen_subcommand_from run' -l namespace -s n -r") {
		t.Errorf("completion fish: exit %d\n%s", code, fish)
	}
	if !strings.Contains(string(fish), "complete -c tether -f -n '__fish_seen_subcommand_from gitlab; and not __fish_seen_subcommand_from config prepare run cleanup' -a 'config prepare run cleanup'") ||
		!strings.Contains(string(fish), "complete -c tether -n '__fish_seen_subcommand_from gitlab' -l gitlab-helper-image -r") {
		t.Errorf("completion fish lacks tether gitlab's subcommands or flags:\n%s", fish)
	}
	if _, stderr, code := tether(t, dir, "completion", "tcsh"); code != exitUsage || !strings.Contains(string(stderr), "tcsh") {
		t.Errorf("completion tcsh: exit %d stderr %q, want %d", code, stderr, exitUsage)
	}
}

// TestKubectlPluginName: installed as kubectl-tether, help speaks of
// `kubectl tether`.
func TestKubectlPluginName(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "kubectl-tether")
	if err := os.Symlink(filepath.Join(binDir, "tether"), plugin); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--help"}, {"run", "--help"}} {
		out, err := exec.Command(plugin, args...).Output()
		if err != nil {
			t.Fatalf("kubectl-tether %v: %v", args, err)
		}
		if !strings.Contains(string(out), "kubectl tether run") || strings.Contains(string(out), "\n  tether run") || strings.Contains(string(out), "Usage: tether ") {
			t.Errorf("kubectl-tether %v help does not say kubectl tether:\n%s", args, out)
		}
	}
}
