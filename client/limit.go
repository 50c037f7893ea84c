package client

import (
	"io"
	"sync/atomic"
)

// limitWriter writes at most left bytes to w and counts the rest, which it
// drops, as written: the session goes on reading the job to its result.
type limitWriter struct {
	w       io.Writer
	left    int64 // only the session's output writer touches it
	dropped atomic.Int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		l.dropped.Add(int64(len(p)))
		return len(p), nil
	}
	n := int64(len(p))
	if n > l.left {
		l.dropped.Add(n - l.left)
		n = l.left
	}
	l.left -= n
	if _, err := l.w.Write(p[:n]); err != nil {
		return 0, err
	}
	return len(p), nil
}
