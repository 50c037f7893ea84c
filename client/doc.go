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
// Their stderr is part of that output, in the order written, unless
// Options.Stderr is set: then it has a pipe of its own in the shim and its
// bytes go there.
//
// # Outcomes
//
//   - err == nil: the shim reported the job's result. Result.ExitCode is the
//     first failing main script's exit code, or 0; nothing a script prints can
//     change it.
//   - errors.Is(err, ErrShimExited): the shim exited before the job finished
//     (deadline, TTL, idle timeout, signal); Result.Exit says why and
//     Result.ExitCode is the shim's exit code (124 for a deadline).
//   - errors.Is(err, ErrNoResult): the stream ended, or the shim stayed
//     unreachable, before any result. The job's outcome is unknown: a
//     failure, never a success.
//   - ctx cancelled: the session sends the cancel command (the shim stops
//     the running script with TERM, then KILL after the grace period, skips
//     the remaining main scripts and still runs the after-scripts), waits
//     up to Options.CancelTimeout for the result, and returns it with
//     Result.Cancelled set and an error wrapping context.Cause(ctx). The
//     cancel is sent again on every new connection until the result comes
//     (one written just before a connection broke may never have arrived);
//     it carries an ID, so the shim acts on it once.
//   - errors.Is(err, ErrNoJob) (Attach only, with ErrNoResult): the shim is
//     idle and its stream holds nothing past the offset Attach reached:
//     there is no job to follow.
//
// # Reconnects
//
// When the transport breaks, or delivers nothing for Options.StallTimeout
// (the session pings every Options.PingInterval), the session connects
// again with exponential backoff and resumes from the offset of the next
// record it needs: no output is lost or repeated. A shim that no longer
// retains that offset is a hard failure (ErrNoResult, "output lost").
//
// # Writing a backend
//
// A Transport's Connect returns a Conn whose Read yields the shim's stdout
// from about the moment of the connection (it may start inside a record:
// the session ignores everything before the answer to its resume command)
// and whose Write feeds the shim's stdin. Close must unblock a Read in
// progress. Once the shim cannot be reached any more (its process or
// container ended), Connect returns an error wrapping ErrShimGone. Output
// written while no connection is attached may be dropped: the shim keeps
// it for the resume. A transport stays a byte pipe: it never parses
// records or commands. One that can still read the shim's stdout after the
// shim is gone (a container log) also implements LogSource; the session
// then reads the rest of the job from there. See the client/local package
// for a small example.
//
// Attach follows a job that another process submitted, for example after a
// runner restart.
//
// # Output and a runner's own notices
//
// A runner that shows the job's output and its own notices (reconnects, a
// summary) on one screen, or merges them into one CI log, wraps its output
// in a LineGate and writes the notices through LineGate.Notices: a notice
// written while the job's last line is open waits for that line's newline,
// or for LineGate.End, so it never lands inside one of the job's lines.
// Events (EventDisconnected, EventConnected, EventLogReplay) tell the
// runner what happened to the connection, to say once, after the output.
package client
