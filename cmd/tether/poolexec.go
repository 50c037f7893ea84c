package main

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/tether-ci/tether/internal/sibling"
)

// poolProgram is the program that `tether pool serve` and `tether pool
// status` run (cmd/tether-pool): the controller's packages (client-go's
// informers and leader election, the Prometheus client) live there, so
// that every other tether command starts without initialising them.
const poolProgram = "tether-pool"

// exitPoolMissing is the exit code when tether-pool cannot be run (as the
// controller's exit code when it cannot reach the cluster).
const exitPoolMissing = 1

// execPool replaces this process with tether-pool, args unchanged (the
// subcommand first), so that its output, signals and exit code are the
// command's own. It returns only when tether-pool cannot be run.
func execPool(args []string, stderr io.Writer) int {
	path, err := findPoolProgram()
	if err == nil {
		err = syscall.Exec(path, append([]string{path}, args...), os.Environ())
	}
	fmt.Fprintf(stderr, "tether pool %s: %v\n", args[0], err)
	return exitPoolMissing
}

// findPoolProgram returns tether-pool's path: beside the running tether
// (or its real path, so a kubectl-tether link finds it too), else on $PATH.
func findPoolProgram() (string, error) {
	p, err := sibling.Find(poolProgram)
	if err != nil {
		return "", fmt.Errorf("%s (the pools' controller) is neither beside tether nor on $PATH: install it beside tether (make install and the release archives ship both): %w", poolProgram, err)
	}
	return p, nil
}
