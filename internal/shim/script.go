package shim

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Exit codes for scripts that could not be run, as a shell reports them.
const (
	codeNotFound      = 127
	codeCannotExecute = 126
)

// checkScript returns the status code and message for a script path that
// cannot be run, or 0 and "" when it looks runnable.
func checkScript(path string) (int, string) {
	if !filepath.IsAbs(path) {
		return codeNotFound, fmt.Sprintf("script path %q is not absolute: send the full path of the script inside the container", path)
	}
	fi, err := os.Stat(path)
	switch {
	case os.IsNotExist(err):
		return codeNotFound, fmt.Sprintf("script %s does not exist", path)
	case err != nil:
		return codeCannotExecute, fmt.Sprintf("cannot access script %s: %v", path, err)
	case fi.IsDir():
		return codeCannotExecute, fmt.Sprintf("script %s is a directory, not a file", path)
	}
	if err := syscall.Access(path, 4 /* R_OK */); err != nil {
		return codeCannotExecute, fmt.Sprintf("script %s is not readable by the shell: %v", path, err)
	}
	return 0, ""
}

// findShell returns the configured shell, else bash, else sh.
func findShell(configured string) (string, error) {
	if configured != "" {
		if _, err := os.Stat(configured); err != nil {
			return "", fmt.Errorf("--shell %s: %w", configured, err)
		}
		return configured, nil
	}
	for _, name := range []string{"bash", "sh"} {
		dirs := append([]string{"/bin", "/usr/bin", "/usr/local/bin"}, filepath.SplitList(os.Getenv("PATH"))...)
		for _, dir := range dirs {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("no shell found (looked for bash and sh in /bin, /usr/bin, /usr/local/bin and PATH): set --shell")
}
