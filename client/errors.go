package client

import "errors"

// ErrShimGone is wrapped by Transport.Connect when the shim can no longer be
// reached at all (its process or container ended). The session stops
// reconnecting when it sees it.
var ErrShimGone = errors.New("shim is gone")

// ErrNoResult is wrapped by the error of Run and Attach when the shim's
// stream ended, or the shim became unreachable, before the job's result
// arrived. The job's outcome is unknown: treat it as a failure.
var ErrNoResult = errors.New("no job result from the shim")

// ErrShimExited is wrapped by the error of Run and Attach when the shim
// wrote its final record (it exited: deadline, TTL, idle timeout, signal,
// fatal error) before the job finished. Result.Exit says why, and
// Result.ExitCode is the shim's exit code.
var ErrShimExited = errors.New("shim exited before the job finished")

// ErrNoJob is wrapped by the error of Attach when there is no job to
// follow: the shim is idle (no script running or queued) and the stream
// holds nothing after the offset Attach reached. The job it ran, if any,
// finished before that offset (Attach from an earlier one, such as 0, to
// replay it), or no job was ever submitted. It also wraps ErrNoResult.
var ErrNoJob = errors.New("no job to follow")
