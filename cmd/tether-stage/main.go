// Command tether-stage is the GitLab driver's stage command (run_exec):
// it runs a stage through the job's agent, which `tether gitlab prepare`
// started, and falls back to `tether gitlab run` (beside it, else on
// PATH) when there is none. It takes `tether gitlab run`'s arguments:
//
//	tether-stage [--config FILE] SCRIPT STAGE
//
// `tether-stage --version` prints its version (the release's, as `tether
// version` does) without reaching an agent or `tether`.
//
// It is small on purpose (the standard library, the stage package and
// the build's version): a stage's process starts as fast as a Go program
// can, a hello world's time. This is the reference build: where a C
// compiler is found, `make build` and the release ship the C build of the
// same program (integration/gitlab/stage/native), which starts in a
// fraction of that; `make build` leaves this one as bin/tether-stage-go.
// See docs/gitlab.md.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/tether-ci/tether/integration/gitlab/stage"
	"github.com/tether-ci/tether/internal/version"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		_, _ = os.Stdout.WriteString("tether-stage " + version.Get() + "\n")
		return
	}
	sigs := make(chan os.Signal, 2)
	dir, _ := os.Getwd()
	p := &stage.Process{
		Args:     os.Args[1:],
		Environ:  os.Environ(),
		Dir:      dir,
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
		Signals:  sigs,
		Listen:   func() { signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM) },
		Fallback: stage.ExecTether(os.Args[1:]),
	}
	os.Exit(p.Run())
}
