// Command tether-shim is the same program as cmd/shim under the name it is
// installed as: `go install github.com/tether-ci/tether/cmd/tether-shim@VERSION`
// yields a binary named tether-shim, which `tether run --local` finds next
// to itself or on PATH. See cmd/shim and `tether-shim --help`.
package main

import (
	"os"

	"github.com/tether-ci/tether/internal/shim"
)

func main() {
	os.Exit(shim.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
