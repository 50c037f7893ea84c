package shim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/tether-ci/tether/internal/reaper"
	"github.com/tether-ci/tether/internal/version"
)

// Main is tether-shim's entry point; it returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	startPs := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") == "" {
		// The shim relays one script at a time: one P spares the wake-ups
		// of a second one looking for work (measured: about 0.1 ms of CPU
		// per script) and leaves the other CPUs to the job.
		runtime.GOMAXPROCS(1)
	}
	if len(args) > 0 {
		switch args[0] {
		case "version", "--version":
			fmt.Fprintln(stdout, "tether-shim", version.Get())
			return 0
		case "help", "--help", "-help", "-h":
			// Asked-for help is output, not a diagnostic: stdout.
			if _, err := ParseConfig([]string{"--help"}, os.Getenv, stdout, time.Now()); errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		case "send":
			if len(args) != 2 {
				fmt.Fprintln(stderr, "usage: tether-shim send FIFO   (copies command lines from stdin into a --commands FIFO)")
				return 2
			}
			if err := sendCommands(stdin, args[1]); err != nil {
				fmt.Fprintln(stderr, "tether-shim:", err)
				return 1
			}
			return 0
		case "copy":
			if len(args) != 2 {
				fmt.Fprintln(stderr, "usage: tether-shim copy DEST")
				return 2
			}
			if err := copySelf(args[1]); err != nil {
				fmt.Fprintln(stderr, "tether-shim:", err)
				return 1
			}
			return 0
		}
	}
	cfg, err := ParseConfig(args, os.Getenv, stderr, time.Now())
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "tether-shim:", err)
		return 2
	}
	startedAgain, scriptSlack := startWithOneP(args, startPs)
	cfg.ScriptTimerSlack = scriptSlack
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if startedAgain {
		log.Debug("started again with one P", "GOMAXPROCS", runtime.GOMAXPROCS(0))
	}
	signals, stopSignals := Signals()
	defer stopSignals()
	rp := reaper.New()
	if os.Getpid() != 1 {
		if err := setSubreaper(); err != nil {
			log.Warn("cannot become a child subreaper; orphans will not be reaped by the shim", "err", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go rp.Run(ctx)
	s, err := New(cfg, rp, stdout, log)
	if err != nil {
		fmt.Fprintln(stderr, "tether-shim:", err)
		return 2
	}
	if cfg.Commands != "" {
		f, err := openCommands(cfg.Commands)
		if err != nil {
			fmt.Fprintln(stderr, "tether-shim:", err)
			return 2
		}
		defer f.Close()
		stdin = f
	}
	return s.Serve(ctx, stdin, signals)
}
