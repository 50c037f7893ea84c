package shim_test

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

// The test binary doubles as a helper program inside scripts (dumb-init
// style): TETHER_TEST_HELPER selects what it does. Scripts find it through
// $TETHER_TEST_BIN, which startShim puts into the shim's environment.
const helperEnv = "TETHER_TEST_HELPER"

// runHelper runs the helper mode named by the environment and reports
// whether it did (then the process must exit).
func runHelper() bool {
	switch os.Getenv(helperEnv) {
	case "print-signals":
		// Print every signal received, one line each; exit 0 after SIGTERM.
		ch := make(chan os.Signal, 16)
		signal.Notify(ch, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM)
		fmt.Println(os.Args[1], "ready")
		for s := range ch {
			fmt.Println(os.Args[1], "got", signalShortName(s.(syscall.Signal)))
			if s == syscall.SIGTERM {
				os.Exit(0)
			}
		}
	case "spawn-orphans":
		// spawn-orphans N DEPTH: start N `sleep 600` processes (through DEPTH
		// levels of helpers that exit at once) and exit without waiting, so
		// all of them become orphans.
		n, _ := strconv.Atoi(os.Args[1])
		depth, _ := strconv.Atoi(os.Args[2])
		attr := &os.ProcAttr{Files: []*os.File{nil, nil, nil}, Env: os.Environ()}
		for i := 0; i < n; i++ {
			var err error
			if depth > 1 {
				_, err = os.StartProcess(os.Args[0], []string{os.Args[0], "1", strconv.Itoa(depth - 1)}, attr)
			} else {
				_, err = os.StartProcess("/bin/sleep", []string{"sleep", "600"}, attr)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	default:
		return false
	}
	return true
}

func signalShortName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGHUP: "HUP", syscall.SIGINT: "INT", syscall.SIGQUIT: "QUIT",
		syscall.SIGUSR1: "USR1", syscall.SIGUSR2: "USR2", syscall.SIGTERM: "TERM"}[s]
}
