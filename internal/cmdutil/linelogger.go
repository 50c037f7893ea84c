package cmdutil

import (
	"bytes"
	"log/slog"
	"strings"
)

// LineLogger is an io.Writer that logs each line written to it as one
// record, so a child's diagnostics (the local shim's stderr) stay JSON
// lines under --log-format json.
type LineLogger struct {
	// Log receives the lines, as warnings.
	Log *slog.Logger
	// Source is each record's source field.
	Source  string
	pending []byte
}

// Write logs every complete line of p; a partial line waits for the rest.
func (l *LineLogger) Write(p []byte) (int, error) {
	l.pending = append(l.pending, p...)
	for {
		i := bytes.IndexByte(l.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		if line := strings.TrimRight(string(l.pending[:i]), "\r"); line != "" {
			l.Log.Warn(line, "source", l.Source)
		}
		l.pending = l.pending[i+1:]
	}
}
