package client

import (
	"io"
	"sync/atomic"
)

// outputBudget is Options.OutputLimit: the bytes the job's output writers
// may still write together, and the bytes dropped past it.
type outputBudget struct {
	left    int64 // only the session's output writers touch it, one at a time
	dropped atomic.Int64
}

// limitWriter writes to w what its budget still allows and counts the rest,
// which it drops, as written: the session goes on reading the job to its
// result.
type limitWriter struct {
	w io.Writer
	b *outputBudget
}

func (l *limitWriter) Write(p []byte) (int, error) {
	b := l.b
	if b.left <= 0 {
		b.dropped.Add(int64(len(p)))
		return len(p), nil
	}
	n := int64(len(p))
	if n > b.left {
		b.dropped.Add(n - b.left)
		n = b.left
	}
	b.left -= n
	if _, err := l.w.Write(p[:n]); err != nil {
		return 0, err
	}
	return len(p), nil
}
