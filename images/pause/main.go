// Command pause is the sandbox ("pause") container of the e2e node's pods
// (image localhost/tether/pause:dev). It holds the pod's namespaces open,
// reaps every child it inherits as PID 1, and exits 0 on SIGTERM or SIGINT.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("tether pause")
		return
	}
	serve(subscribe())
}

// subscribe starts catching the signals pause acts on.
func subscribe() <-chan os.Signal {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	return sigs
}

// serve reaps on SIGCHLD and exits 0 on SIGTERM or SIGINT.
func serve(sigs <-chan os.Signal) {
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every exited child without blocking, so orphans that were
// re-parented to this process do not stay zombies.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
