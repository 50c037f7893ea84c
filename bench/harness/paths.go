package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
)

// outcome is what one run of a script through a relay path measured.
type outcome struct {
	// wall is from starting the script to its last byte at the writer.
	wall time.Duration
	// relayCPU is the CPU time of the relay alone (user+system): the
	// relay processes and this process's reading side, not the script.
	relayCPU time.Duration
	// shimCPU and clientCPU split a tether run's CPU time between the
	// shim process (itself, not its scripts) and this process.
	shimCPU, clientCPU time.Duration
	// stream is the length of a tether run's record stream in bytes.
	stream int64
}

// relayPath carries a script's output to a writer.
type relayPath interface {
	// label names the path in tables.
	label() string
	// run runs script and writes its output to out; it fails when the
	// script fails or the relay breaks.
	run(ctx context.Context, script string, out io.Writer) (outcome, error)
}

// readBufSize is the reading side's buffer for the baselines, as big as
// the shim's and the local backend's reads.
const readBufSize = 64 << 10

// catPath is the baseline: script | cat | this process.
type catPath struct{ shell string }

func (catPath) label() string { return "plain `cat` relay" }

func (p catPath) run(ctx context.Context, script string, out io.Writer) (outcome, error) {
	start := time.Now()
	cpu0 := selfCPU()
	sr, sw, err := os.Pipe()
	if err != nil {
		return outcome{}, fmt.Errorf("cat relay: pipe: %w", err)
	}
	cr, cw, err := os.Pipe()
	if err != nil {
		sr.Close()
		sw.Close()
		return outcome{}, fmt.Errorf("cat relay: pipe: %w", err)
	}
	defer cr.Close()
	gen := exec.CommandContext(ctx, p.shell, script)
	gen.Stdout, gen.Stderr = sw, sw
	cat := exec.CommandContext(ctx, "cat")
	cat.Stdin, cat.Stdout = sr, cw
	err = startAll(gen, cat)
	sr.Close()
	sw.Close()
	cw.Close()
	if err != nil {
		return outcome{}, fmt.Errorf("cat relay: %w", err)
	}
	_, copyErr := copyOut(out, cr)
	genErr, catErr := gen.Wait(), cat.Wait()
	wall := time.Since(start)
	if err := errors.Join(copyErr, genErr, catErr); err != nil {
		return outcome{}, fmt.Errorf("cat relay of %s: %w", script, err)
	}
	return outcome{wall: wall, relayCPU: processCPU(cat.ProcessState) + selfCPU() - cpu0}, nil
}

// tetherPath is the real path: the script runs under bin/tether-shim (a
// child process, the local backend), its records are decoded by a
// client session and its output bytes written to the writer.
type tetherPath struct {
	shim, shell string
	// memoryReplay runs the shim with its memory replay window instead of
	// the spool file the local backend (and a pod) uses by default.
	memoryReplay bool
	// watch, if set, is called with the shim's pid once it runs; the
	// function it returns is called after the job, before the shim exits.
	watch func(pid int) func()
}

func (p tetherPath) label() string {
	if p.memoryReplay {
		return "tether (memory replay)"
	}
	return "tether (shim → records → session)"
}

func (p tetherPath) args() []string {
	args := []string{"--shell=" + p.shell}
	if p.memoryReplay {
		args = append(args, "--spool-dir=")
	}
	return args
}

func (p tetherPath) run(ctx context.Context, script string, out io.Writer) (outcome, error) {
	shim, err := local.Start(ctx, local.Config{Shim: p.shim, Args: p.args()})
	if err != nil {
		return outcome{}, err
	}
	defer shim.Close()
	var stopWatch func()
	if p.watch != nil {
		stopWatch = p.watch(shim.Pid())
	}
	cpu0 := selfCPU()
	shimCPU0, _ := pidCPU(shim.Pid())
	start := time.Now()
	res, err := client.Run(ctx, shim, client.Job{Scripts: []string{script}}, client.Options{Output: out})
	wall := time.Since(start)
	selfUsed := selfCPU() - cpu0
	shimCPU, cpuErr := pidCPU(shim.Pid())
	if stopWatch != nil {
		stopWatch()
	}
	if err != nil {
		return outcome{}, fmt.Errorf("tether run of %s: %w", script, err)
	}
	if res.ExitCode != 0 {
		return outcome{}, fmt.Errorf("tether run of %s: exit code %d", script, res.ExitCode)
	}
	if cpuErr != nil {
		return outcome{}, cpuErr
	}
	return outcome{wall: wall, relayCPU: shimCPU - shimCPU0 + selfUsed, shimCPU: shimCPU - shimCPU0, clientCPU: selfUsed, stream: res.Offset}, nil
}

// startAll starts every command or none.
func startAll(cmds ...*exec.Cmd) error {
	for i, c := range cmds {
		if err := c.Start(); err != nil {
			for _, s := range cmds[:i] {
				_ = s.Process.Kill()
				_ = s.Wait()
			}
			return fmt.Errorf("start %s: %w", c.Path, err)
		}
	}
	return nil
}

// copyOut copies r to w with a readBufSize buffer (each read becomes one
// write, as the session's writes are).
func copyOut(w io.Writer, r io.Reader) (int64, error) {
	buf := make([]byte, readBufSize)
	var n int64
	for {
		m, err := r.Read(buf)
		if m > 0 {
			if _, werr := w.Write(buf[:m]); werr != nil {
				return n, werr
			}
			n += int64(m)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
