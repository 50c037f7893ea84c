package kube

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tether-ci/tether/protocol"
)

// Limits of the diagnostics a ContainerEndedError carries: it becomes one
// error line, and the container's log has the rest.
const (
	diagnosticLines = 5
	diagnosticBytes = 1024
)

// diagnostics returns what a shim container's termination message (the
// tail of its log, which the kubelet keeps when the container fails) says
// about why the shim ended, as one line: the lines written after the shim's
// last record (its stderr: a fatal error, a panic's message), or every line
// that is not a record when the tail holds none. Records are dropped, and so
// are the payloads of block records (the script's raw output), a Go
// program's goroutine traces and blank lines. At most diagnosticLines lines
// and about diagnosticBytes bytes are kept, the last ones, joined by "; ";
// what was left out is counted.
func diagnostics(msg string) string {
	var lines []string
	rest := []byte(msg)
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		rec, _, err := protocol.Parse(withNewline(line), nil)
		if err != nil {
			lines = append(lines, string(bytes.TrimSpace(line)))
			continue
		}
		lines = lines[:0] // what came before the shim's last record
		if rec.Type == protocol.TypeBlock {
			// The script's bytes and the block's final newline.
			rest = rest[min(rec.Size-len(withNewline(line)), len(rest)):]
		}
	}
	var keep []string
	for _, l := range lines {
		if strings.HasPrefix(l, "goroutine ") {
			break // a panic's traces follow its message
		}
		if l != "" {
			keep = append(keep, l)
		}
	}
	return joinLast(keep)
}

// joinLast joins the last of lines that fit the diagnostics' limits, saying
// how many were left out.
func joinLast(lines []string) string {
	from, size := len(lines), 0
	for from > 0 && len(lines)-from < diagnosticLines && size+len(lines[from-1]) <= diagnosticBytes {
		from--
		size += len(lines[from]) + 2
	}
	if from == len(lines) && from > 0 {
		// One line longer than the limit: its end.
		last := lines[from-1]
		cut := len(last) - diagnosticBytes
		for cut < len(last) && !utf8.RuneStart(last[cut]) {
			cut++
		}
		lines = append(lines[:from-1:from-1], "…"+last[cut:])
		from--
	}
	out := strings.Join(lines[from:], "; ")
	if from > 0 {
		out = fmt.Sprintf("(%d earlier lines in the container's log) %s", from, out)
	}
	return out
}

// withNewline returns line ending in a newline, as protocol.Parse wants
// it (the message's last line may have none).
func withNewline(line []byte) []byte {
	if len(line) > 0 && line[len(line)-1] == '\n' {
		return line
	}
	return append(line[:len(line):len(line)], '\n')
}
