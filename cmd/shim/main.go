// Command tether-shim is PID 1 of a CI build container: it runs the script
// paths it reads on stdin and writes their output and exit status as
// records on stdout. See protocol/PROTOCOL.md and `tether-shim --help`.
package main

import (
	"os"

	"github.com/tether-ci/tether/internal/shim"
)

func main() {
	os.Exit(shim.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
