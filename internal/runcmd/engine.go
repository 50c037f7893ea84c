package runcmd

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"
)

// engineFlags are the `tether run` flags for how the shim runs scripts.
type engineFlags struct {
	// Shell (--shell PATH) runs every script, whatever its "#!" line.
	Shell string
	// TTY (--tty) runs the scripts under a pseudo-terminal.
	TTY bool
}

// registerEngineFlags adds the script-running flags to fs.
func registerEngineFlags(fs *pflag.FlagSet, f *engineFlags) {
	fs.StringVar(&f.Shell, "shell", "", "run every script with this shell (absolute `PATH` in the container), whatever its #! line says (default: a script's #! interpreter, else bash, else sh)")
	fs.BoolVar(&f.TTY, "tty", false, "run the scripts under a pseudo-terminal, for tools that colour or animate only on a terminal (stdout and stderr then arrive as one stream, with CR LF line ends if the script's terminal settings say so)")
}

// validate checks the engine flags.
func (f *engineFlags) validate() error {
	if f.Shell != "" && !filepath.IsAbs(f.Shell) {
		return fmt.Errorf("--shell %q: give the shell's absolute path inside the container (e.g. /bin/sh)", f.Shell)
	}
	return nil
}
