package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
	"github.com/tether-ci/tether/protocol"
)

// writeScripts writes example scripts into a temporary directory and
// returns their paths.
func writeScripts(bodies ...string) (dir string, paths []string) {
	dir, err := os.MkdirTemp("", "tether-example")
	if err != nil {
		panic(err)
	}
	for i, body := range bodies {
		p := filepath.Join(dir, fmt.Sprintf("step%d.sh", i+1))
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			panic(err)
		}
		paths = append(paths, p)
	}
	return dir, paths
}

// Run a job through the local backend (tether-shim as a child process).
// Any other backend only changes the Transport.
func Example() {
	dir, scripts := writeScripts("echo building\nprintf 'a partial line'\n")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	shimPath, err := local.FindShim("") // next to this program, else on PATH
	if err != nil {
		fmt.Println(err)
		return
	}
	shim, err := local.Start(ctx, local.Config{Shim: shimPath})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer shim.Close()

	res, err := client.Run(ctx, shim, client.Job{Scripts: scripts}, client.Options{Output: os.Stdout})
	if err != nil {
		fmt.Println("no result:", err)
		return
	}
	fmt.Printf("\nexit code %d\n", res.ExitCode)
	// Output:
	// building
	// a partial line
	// exit code 0
}

// CI job semantics: main scripts run until one fails, after-scripts always
// run, and the job's exit code is the failing script's. Events report each
// script's status as it finishes.
func ExampleRun_afterScripts() {
	dir, scripts := writeScripts("echo compile", "echo test; exit 3", "echo deploy", "echo cleanup")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	shimPath, err := local.FindShim("")
	if err != nil {
		fmt.Println(err)
		return
	}
	shim, err := local.Start(ctx, local.Config{Shim: shimPath})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer shim.Close()

	job := client.Job{Scripts: scripts[:3], After: scripts[3:]}
	res, err := client.Run(ctx, shim, job, client.Options{
		Output: os.Stdout,
		Events: func(ev client.Event) {
			if ev.Kind == client.EventScriptStatus {
				fmt.Printf("[%s %s exited %d]\n", ev.Phase, filepath.Base(ev.Script), ev.Status.CommandExitCode)
			}
		},
	})
	if err != nil {
		fmt.Println("no result:", err)
		return
	}
	fmt.Printf("job exit code %d, failed script %s\n", res.ExitCode, filepath.Base(res.FailedScript))
	// Output:
	// compile
	// [script step1.sh exited 0]
	// test
	// [script step2.sh exited 3]
	// cleanup
	// [after step4.sh exited 0]
	// job exit code 3, failed script step2.sh
}

// Cancelling the context cancels the job: the shim stops the running
// script (TERM, then KILL after the grace period), skips the remaining main
// scripts, still runs the after-scripts, and Run reports the cancel.
func ExampleRun_cancel() {
	dir, scripts := writeScripts("echo started\nsleep 60\n", "echo cleanup")
	defer os.RemoveAll(dir)
	shimPath, err := local.FindShim("")
	if err != nil {
		fmt.Println(err)
		return
	}
	shim, err := local.Start(context.Background(), local.Config{Shim: shimPath})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer shim.Close()

	ctx, cancel := context.WithTimeoutCause(context.Background(), 5*time.Second, errors.New("job timeout"))
	defer cancel()
	res, err := client.Run(ctx, shim, client.Job{Scripts: scripts[:1], After: scripts[1:]}, client.Options{Output: os.Stdout})
	fmt.Println("cancelled:", res.Cancelled, "exit code:", res.ExitCode)
	fmt.Println("error:", err)
	// Output:
	// started
	// cleanup
	// cancelled: true exit code: 143
	// error: job cancelled: job timeout
}

// Attach follows a job another process submitted (a runner that restarted
// while its job kept running), replaying its output from the start.
func ExampleAttach() {
	dir, scripts := writeScripts("echo from the job\n")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	shimPath, err := local.FindShim("")
	if err != nil {
		fmt.Println(err)
		return
	}
	shim, err := local.Start(ctx, local.Config{Shim: shimPath})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer shim.Close()

	// Another process submitted job "build-42" and died: here, a bare
	// connection that writes the job command and goes away.
	conn, err := shim.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	line, _ := protocol.AppendCommand(nil, protocol.Command{Cmd: protocol.CmdJob, ID: "build-42", Scripts: scripts})
	_, _ = conn.Write(line)
	conn.Close()

	res, err := client.Attach(ctx, shim, 0, client.Options{Output: os.Stdout})
	if err != nil {
		fmt.Println("no result:", err)
		return
	}
	fmt.Println("exit code", res.ExitCode)
	// Output:
	// from the job
	// exit code 0
}
