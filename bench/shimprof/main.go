// Command shimprof is tether-shim with a CPU profile: it runs the shim
// exactly as cmd/shim does and, when TETHER_SHIM_CPUPROFILE names a file,
// writes a pprof CPU profile of the whole run there. Point the bench
// harness at it with BENCH_SHIM=path to profile the shim on the real relay
// path:
//
//	go build -o /tmp/shimprof ./bench/shimprof
//	BENCH_SHIM=/tmp/shimprof TETHER_SHIM_CPUPROFILE=/tmp/shim.prof BENCH_ONLY=relay ...
//
// Each shim process writes its own file: the path with "." and its pid
// appended.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/tether-ci/tether/internal/shim"
)

func main() {
	os.Exit(run())
}

func run() int {
	if path := os.Getenv("TETHER_SHIM_CPUPROFILE"); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
		if err != nil {
			fmt.Fprintln(os.Stderr, "shimprof:", err)
			return 70
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "shimprof:", err)
			return 70
		}
		defer pprof.StopCPUProfile()
	}
	return shim.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}
