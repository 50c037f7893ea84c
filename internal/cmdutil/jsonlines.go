package cmdutil

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
)

// JSONLogRequested reports whether args ask for --log-format json, so
// that messages written before the flags are parsed (signal notices) are
// JSON too.
func JSONLogRequested(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return false
		}
		if a == "--log-format=json" || a == "--log-format" && i+1 < len(args) && args[i+1] == "json" {
			return true
		}
	}
	return false
}

// JSONLines is the stderr of a `--log-format json` run: lines that are
// JSON objects pass through, any other line (a usage error, a signal
// notice, a library's direct write) becomes a JSON log record, so every
// stderr line parses as JSON.
type JSONLines struct {
	mu      sync.Mutex
	w       io.Writer
	log     *slog.Logger // JSON records straight to w
	pending []byte
}

// NewJSONLines returns a JSONLines writing to w.
func NewJSONLines(w io.Writer) *JSONLines {
	return &JSONLines{w: w, log: slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: JSONAttr}))}
}

// Write passes complete JSON lines through and wraps the others.
func (j *JSONLines) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = append(j.pending, p...)
	for {
		i := bytes.IndexByte(j.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		j.line(j.pending[:i+1])
		j.pending = j.pending[i+1:]
	}
}

// line writes one line (with its newline), as it is when it is a JSON
// object, else wrapped.
func (j *JSONLines) line(b []byte) {
	t := bytes.TrimSpace(b)
	switch {
	case len(t) == 0:
	case t[0] == '{' && json.Valid(t):
		_, _ = j.w.Write(append(t, '\n'))
	default:
		j.log.Warn(string(t), "source", "tether")
	}
}

// Flush writes a last unterminated line.
func (j *JSONLines) Flush() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.pending) > 0 {
		j.line(j.pending)
		j.pending = nil
	}
}
