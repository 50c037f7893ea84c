// Package sibling finds a program installed beside the running one (the
// shim beside tether, tether-pool beside tether, tether beside
// tether-stage), else on PATH. It uses the standard library alone, so
// that tether-stage may import it.
package sibling

import (
	"os"
	"os/exec"
	"path/filepath"
)

// Find returns the path of the program name: beside the running
// executable as it was started, then beside its real path (behind a
// symlink such as kubectl-tether), else on PATH. When it is nowhere, the
// error is exec.LookPath's (wrapping exec.ErrNotFound when PATH has none).
func Find(name string) (string, error) {
	if self, err := os.Executable(); err == nil {
		dirs := []string{filepath.Dir(self)}
		if real, err := filepath.EvalSymlinks(self); err == nil && filepath.Dir(real) != dirs[0] {
			dirs = append(dirs, filepath.Dir(real))
		}
		for _, dir := range dirs {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return exec.LookPath(name)
}
