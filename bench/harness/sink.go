package main

import (
	"bytes"
	"sync"
	"time"
)

// countSink is the io.Discard-like end of every relay: it counts the bytes
// and newlines it receives (the newline count is a cheap check that the
// bytes are the right ones, applied the same way to every path).
type countSink struct {
	n, lines int64
}

func (s *countSink) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	s.lines += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// stamp is one write seen by a stampSink.
type stamp struct {
	at   time.Time
	data string
}

// stampSink notes when each write arrives, for latency measurements.
type stampSink struct {
	ch chan stamp
	mu sync.Mutex
	n  int
}

func newStampSink() *stampSink { return &stampSink{ch: make(chan stamp, 1024)} }

func (s *stampSink) Write(p []byte) (int, error) {
	now := time.Now()
	s.mu.Lock()
	s.n += len(p)
	s.mu.Unlock()
	s.ch <- stamp{at: now, data: string(p)}
	return len(p), nil
}
