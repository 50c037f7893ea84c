// Package client runs CI jobs in a tether-shim and follows them.
//
// A CI runner starts a shim somewhere (a child process, a Kubernetes pod, a
// container), wraps the way it reaches the shim's stdin and stdout in a
// Transport, and calls Run with the job's scripts:
//
//	res, err := client.Run(ctx, transport, client.Job{Scripts: []string{"/scripts/build.sh"}},
//		client.Options{Output: os.Stdout})
//
// Run writes the scripts' output bytes to Options.Output exactly as the
// scripts wrote them (partial lines as soon as the shim forwards them),
// reports progress through Options.Events, and returns the job's Result.
//
// The session behind Run is resilient: when the transport breaks while the
// shim keeps running, it reconnects with backoff and resumes from the last
// byte it received, so no output is lost or repeated. A stream that ends
// without the shim's job record or final record is an error (wrapping
// ErrNoResult or ErrShimExited), never a success. Cancelling ctx cancels the
// job: the shim stops the running script (TERM, grace, KILL), runs no further
// main scripts, and Run returns a Result with Cancelled set and an error
// wrapping the context's cause.
//
// Attach follows a job that another process submitted, for example after a
// runner restart.
package client
