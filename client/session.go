package client

import (
	"context"
	"errors"
)

// Run submits job to the shim behind t and follows it to its result.
// See the package documentation for reconnects and cancellation.
func Run(ctx context.Context, t Transport, job Job, opts Options) (Result, error) {
	return Result{}, errors.New("client.Run: not implemented yet")
}

// Attach follows a job that was already submitted (by another process),
// replaying its output from offset from (0 for the whole stream). It returns
// at the first job record, or at the shim's final record.
func Attach(ctx context.Context, t Transport, from int64, opts Options) (Result, error) {
	return Result{}, errors.New("client.Attach: not implemented yet")
}
