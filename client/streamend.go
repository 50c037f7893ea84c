package client

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// StreamEnd returns the offset where the shim's record stream ends now,
// when the shim is idle: the From of the next job submitted to a shim that
// ran others before. It follows the stream from from (0, or an offset known
// to be earlier) over the jobs recorded there, discarding their output, and
// fails when a job is still running (it would follow it to its end) or
// the shim cannot be reached.
func StreamEnd(ctx context.Context, t Transport, from int64, opts Options) (int64, error) {
	opts.Output, opts.Events, opts.ExitShim = io.Discard, nil, false
	for {
		res, err := Attach(ctx, t, from, opts)
		switch {
		case errors.Is(err, ErrNoJob):
			return res.Offset, nil
		case err != nil:
			return 0, fmt.Errorf("find the end of the shim's record stream: %w", err)
		case res.Offset <= from:
			return 0, fmt.Errorf("find the end of the shim's record stream: no progress past offset %d", from)
		}
		from = res.Offset
	}
}
