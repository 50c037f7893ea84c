package shim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxShebang is how much of a script is read to find its "#!" line (the
// kernel's own limit is similar).
const maxShebang = 256

// argv returns the program and arguments that run script. A shell chosen
// explicitly (the job's shell, else tether-shim --shell) wins; otherwise a
// script starting with "#!" runs by the interpreter it names (as the kernel
// would run it, without needing the execute bit), and any other script by
// the default shell. code and msg are set (and the rest empty) when the
// script cannot be run that way.
func (r *runner) argv(script, jobShell string) (prog string, args []string, code int, msg string) {
	switch {
	case jobShell != "":
		if fi, err := os.Stat(jobShell); err != nil || fi.IsDir() {
			return "", nil, codeNotFound, fmt.Sprintf("the job's shell %s does not exist in the container: choose another shell", jobShell)
		}
		return jobShell, []string{jobShell, script}, 0, ""
	case r.explicitShell:
		return r.shell, []string{r.shell, script}, 0, ""
	}
	if interp, arg, ok := readShebang(script); ok {
		line := "#!" + interp
		if arg != "" {
			line += " " + arg
		}
		if fi, err := os.Stat(interp); err != nil || fi.IsDir() {
			return "", nil, codeNotFound, fmt.Sprintf("interpreter %s named by the script's first line (%s) does not exist in the container: install it, fix the line, or choose a shell with --shell", interp, line)
		}
		if filepath.Base(interp) == "env" && arg != "" && !strings.HasPrefix(arg, "-") && !strings.ContainsAny(arg, " \t") {
			if _, found := lookPath(arg, r.env); !found {
				return "", nil, codeNotFound, fmt.Sprintf("interpreter %s named by the script's first line (%s) is not on the container's PATH: install it, fix the line, or choose a shell with --shell", arg, line)
			}
		}
		if arg != "" {
			return interp, []string{interp, arg, script}, 0, ""
		}
		return interp, []string{interp, script}, 0, ""
	}
	if r.shell == "" {
		return "", nil, codeNotFound, "no shell to run the script with: set --shell"
	}
	return r.shell, []string{r.shell, script}, 0, ""
}

// readShebang returns the interpreter and its optional single argument
// from a script's "#!" line, as Linux splits it: the interpreter up to the
// first blank, the rest of the line (trimmed) as one argument.
func readShebang(script string) (interp, arg string, ok bool) {
	// Bare system calls: an os.File would add an fstat, a finalizer and
	// allocations to every script's start.
	fd, err := syscall.Open(script, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", "", false
	}
	var buf [maxShebang]byte
	n, err := syscall.Read(fd, buf[:])
	for errors.Is(err, syscall.EINTR) {
		n, err = syscall.Read(fd, buf[:])
	}
	syscall.Close(fd)
	if err != nil || n < 0 {
		return "", "", false
	}
	head := buf[:n]
	if !bytes.HasPrefix(head, []byte("#!")) {
		return "", "", false
	}
	line, _, _ := bytes.Cut(head[2:], []byte{'\n'})
	s := strings.Trim(string(line), " \t\r")
	if s == "" {
		return "", "", false
	}
	interp, arg, _ = strings.Cut(strings.ReplaceAll(s, "\t", " "), " ")
	return interp, strings.TrimSpace(arg), true
}

// lookPath finds name in the PATH of env (the scripts' environment).
func lookPath(name string, env []string) (string, bool) {
	if strings.Contains(name, "/") {
		fi, err := os.Stat(name)
		return name, err == nil && !fi.IsDir()
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// command returns the program and arguments that run sc: its argv as it
// is (the program found on the scripts' PATH when its name has no slash,
// as execvp does), else the script by argv. code and msg are set when it
// cannot run.
func (r *runner) command(sc scriptStart) (prog string, args []string, code int, msg string) {
	if len(sc.argv) > 0 {
		p, found := lookPath(sc.argv[0], r.env)
		if !found {
			return "", nil, codeNotFound, fmt.Sprintf("program %s not found in the container (not an executable file, or not on its PATH)", sc.argv[0])
		}
		return p, sc.argv, 0, ""
	}
	if code, msg := checkScript(sc.path); code != 0 {
		return "", nil, code, msg
	}
	return r.argv(sc.path, sc.shell)
}
