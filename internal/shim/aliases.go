package shim

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether-ci/tether/protocol"
)

// commandAlias is one --command-alias NAME=TARGET: scripts that call Name
// run Target where their PATH has no Name.
type commandAlias struct {
	Name, Target string
}

// aliasFlag is the repeatable --command-alias flag (each value may also be
// a comma-separated list, as in its environment variable).
type aliasFlag struct{ list *[]commandAlias }

// String implements flag.Value.
func (f aliasFlag) String() string {
	if f.list == nil {
		return ""
	}
	var parts []string
	for _, a := range *f.list {
		parts = append(parts, a.Name+"="+a.Target)
	}
	return strings.Join(parts, ",")
}

// Set implements flag.Value: it adds NAME=TARGET[,NAME=TARGET…].
func (f aliasFlag) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		a, err := parseAlias(item)
		if err != nil {
			return err
		}
		for _, old := range *f.list {
			if old.Name == a.Name {
				return fmt.Errorf("command alias %q is given twice", a.Name)
			}
		}
		*f.list = append(*f.list, a)
	}
	return nil
}

// parseAlias parses NAME=TARGET: NAME a plain file name, TARGET a command
// name or an absolute path.
func parseAlias(s string) (commandAlias, error) {
	name, target, ok := strings.Cut(s, "=")
	a := commandAlias{Name: strings.TrimSpace(name), Target: strings.TrimSpace(target)}
	switch {
	case !ok || a.Name == "" || a.Target == "":
		return a, fmt.Errorf("command alias %q: want NAME=TARGET", s)
	case strings.Contains(a.Name, "/") || a.Name == "." || a.Name == "..":
		return a, fmt.Errorf("command alias %q: NAME must be a command name, not a path", s)
	case strings.Contains(a.Target, "/") && !filepath.IsAbs(a.Target):
		return a, fmt.Errorf("command alias %q: TARGET must be a command name or an absolute path", s)
	}
	return a, nil
}

// defaultPath is the PATH looked in when the scripts' environment has
// none: the one container runtimes give a process whose image sets none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// aliasLinks resolves aliases against path (the scripts' PATH) when the
// shim starts: a Name found on path is left alone; else a Target found
// on path is linked as Name in the directory mkdir returns (called at
// most once, when a link is needed). It returns what each alias resolved
// to, for the hello, and the directory when it holds a link (then it
// goes first on the scripts' PATH), else "".
func aliasLinks(aliases []commandAlias, path string, mkdir func() (string, error)) ([]protocol.CommandAlias, string) {
	if len(aliases) == 0 {
		return nil, ""
	}
	var (
		out            []protocol.CommandAlias
		dir, linkedDir string
		dirErr         error
	)
	for _, a := range aliases {
		r := protocol.CommandAlias{Name: a.Name, Target: a.Target}
		if p, ok := findCommand(a.Name, path); ok {
			r.Path = p
			out = append(out, r)
			continue
		}
		target, ok := findCommand(a.Target, path)
		if !ok {
			out = append(out, r)
			continue
		}
		if dir == "" && dirErr == nil {
			dir, dirErr = mkdir()
		}
		err := dirErr
		if err == nil {
			err = link(target, filepath.Join(dir, a.Name))
		}
		if err != nil {
			r.Error = fmt.Sprintf("cannot link %s as %s: %v", target, a.Name, err)
		} else {
			r.Path, r.Linked, linkedDir = target, true, dir
		}
		out = append(out, r)
	}
	return out, linkedDir
}

// link makes name a symbolic link to target, replacing what name was (a
// link left by an earlier shim of a restarted container).
func link(target, name string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Symlink(target, name)
}

// findCommand finds an executable file named cmd in the directories of path
// (cmd itself when it is an absolute path), as a shell does; the file is
// returned as an absolute path. Empty entries (the working directory)
// are skipped: scripts change it.
func findCommand(cmd, path string) (string, bool) {
	if filepath.IsAbs(cmd) {
		return cmd, executable(cmd)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, cmd)
		if !executable(p) {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			return abs, true
		}
	}
	return "", false
}

// executable reports whether p is a regular file (after links) with an
// execute bit.
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// envPath returns env's PATH, or defaultPath when it has none.
func envPath(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return v
		}
	}
	return defaultPath
}

// withPathFirst returns env with dir put first on its PATH (on
// defaultPath when env has none).
func withPathFirst(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return append(out, "PATH="+dir+string(filepath.ListSeparator)+envPath(env))
}

// aliasDir returns the directory the links of the shim's aliases go into:
// bin in the spool directory (a volume of the shim's own, writable with a
// read-only root and for any user), else a new temporary directory
// (temp set), which the shim removes when it ends.
func aliasDir(spoolDir string) (dir string, temp bool, err error) {
	if spoolDir != "" {
		dir = filepath.Join(spoolDir, "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", false, fmt.Errorf("create the command alias directory: %w", err)
		}
		return dir, false, nil
	}
	dir, err = os.MkdirTemp("", "tether-shim-bin-")
	if err != nil {
		return "", false, fmt.Errorf("create the command alias directory: %w", err)
	}
	return dir, true, nil
}

// commandAliases sets up cfg's command aliases for scripts whose
// environment is env: it returns what each resolved to (for the hello),
// the scripts' environment (their PATH starting with the links' directory
// when a link was made), and a temporary directory the shim must remove
// when it ends ("" for none).
func commandAliases(cfg *Config, env []string, log *slog.Logger) (aliases []protocol.CommandAlias, scriptEnv []string, tempDir string) {
	aliases, dir := aliasLinks(cfg.CommandAliases, envPath(env), func() (string, error) {
		d, temp, err := aliasDir(cfg.SpoolDir)
		if temp {
			tempDir = d
		}
		return d, err
	})
	for _, a := range aliases {
		switch {
		case a.Error != "":
			log.Warn("command alias not made: scripts cannot run "+a.Name, "alias", a.Name, "target", a.Target, "err", a.Error)
		case a.Linked:
			log.Debug("command alias linked", "alias", a.Name, "path", a.Path, "dir", dir)
		case a.Missing():
			log.Debug("command alias: neither the command nor its target is on the scripts' PATH", "alias", a.Name, "target", a.Target)
		}
	}
	if dir != "" {
		env = withPathFirst(env, dir)
	}
	return aliases, env, tempDir
}
