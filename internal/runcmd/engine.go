package runcmd

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// engineFlags are the `tether run` flags for how the shim runs scripts.
type engineFlags struct {
	// Shell (--shell PATH) runs every script, whatever its "#!" line.
	Shell string
	// TTY (--tty) runs the scripts under a pseudo-terminal.
	TTY bool
	// Stderr (--stderr) is where the scripts' stderr goes:
	// protocol.StderrMerged (into stdout, in the order written) or
	// protocol.StderrSeparate (to tether's stderr).
	Stderr string
	// jobStderr receives the scripts' stderr with --stderr separate (set
	// by Run).
	jobStderr io.Writer
}

// registerEngineFlags adds the script-running flags to fs.
func registerEngineFlags(fs *pflag.FlagSet, f *engineFlags) {
	fs.StringVar(&f.Shell, "shell", "", "run every script with this shell (absolute `PATH` in the container), whatever its #! line says (default: a script's #! interpreter, else bash, else sh)")
	fs.StringVar(&f.Stderr, "stderr", protocol.StderrMerged, "where the scripts' stderr goes: "+protocol.StderrMerged+" (into stdout, in the order written) or "+protocol.StderrSeparate+" (to tether's stderr, apart from their stdout; the order between the two is then only what two pipes keep)")
	fs.BoolVar(&f.TTY, "tty", false, "run the scripts under a pseudo-terminal, for tools that colour or animate only on a terminal (stdout and stderr then arrive as one stream, with CR LF line ends if the script's terminal settings say so)")
}

// validate checks the engine flags.
func (f *engineFlags) validate() error {
	if f.Shell != "" && !filepath.IsAbs(f.Shell) {
		return fmt.Errorf("--shell %q: give the shell's absolute path inside the container (e.g. /bin/sh)", f.Shell)
	}
	switch f.Stderr {
	case protocol.StderrMerged:
	case protocol.StderrSeparate:
		if f.TTY {
			return fmt.Errorf("--stderr %s and --tty exclude each other: a terminal is one stream", protocol.StderrSeparate)
		}
	default:
		return fmt.Errorf("--stderr %q: want %s or %s", f.Stderr, protocol.StderrMerged, protocol.StderrSeparate)
	}
	return nil
}

// applyStderr sets opts.Stderr for --stderr separate.
func (f *engineFlags) applyStderr(opts *client.Options) {
	if f.Stderr == protocol.StderrSeparate {
		opts.Stderr = f.jobStderr
	}
}
