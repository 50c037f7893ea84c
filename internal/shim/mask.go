package shim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tether-ci/tether/protocol"
)

// maskText replaces every masked value in script output.
var maskText = []byte("[MASKED]")

// maskSet is an immutable set of byte strings to mask: the secret values
// and their URL-encoded forms. A new value makes a new set.
type maskSet struct {
	values [][]byte  // longest first, so the longest match wins
	first  [256]bool // bytes a value starts with
	maxLen int
}

// with returns a set holding s's values and the new ones with their
// URL-encoded forms.
func (s *maskSet) with(values []string) *maskSet {
	n := &maskSet{}
	if s != nil {
		n.values = slices.Clone(s.values)
	}
	for _, v := range values {
		for _, form := range []string{v, urlEscape(v, true), urlEscape(v, false)} {
			if slices.ContainsFunc(n.values, func(b []byte) bool { return string(b) == form }) {
				continue
			}
			// Longest first: before the first shorter value.
			at := slices.IndexFunc(n.values, func(b []byte) bool { return len(b) < len(form) })
			if at < 0 {
				at = len(n.values)
			}
			n.values = slices.Insert(n.values, at, []byte(form))
		}
	}
	for _, v := range n.values {
		n.first[v[0]] = true
		n.maxLen = max(n.maxLen, len(v))
	}
	return n
}

// masks is the shim's current mask set: the serve loop adds values, each
// script's output stream takes the set in force when the script starts.
type masks struct {
	mu  sync.Mutex
	set *maskSet
}

// add makes values masked in the output of scripts that start afterwards.
func (m *masks) add(values []string) {
	if len(values) == 0 {
		return
	}
	m.mu.Lock()
	m.set = m.set.with(values)
	m.mu.Unlock()
}

// current returns the set in force (nil: nothing to mask).
func (m *masks) current() *maskSet {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.set
}

// maskStream masks one script's output on its way to emit. Output that
// cannot be the start of a masked value goes out at once; a tail that can
// (at most the longest value minus one byte) waits for the next write, or
// for flush at the end of the output.
type maskStream struct {
	set  *maskSet
	emit func([]byte)
	buf  []byte // pending tail + new bytes
	out  []byte // masked bytes to emit
}

// write masks p (after the held tail) and emits what is safe.
func (m *maskStream) write(p []byte) {
	if m.set == nil {
		m.emit(p)
		return
	}
	m.buf = append(m.buf, p...)
	data := m.buf
	m.out = m.out[:0]
	i, start, hold := 0, 0, len(data)
	for i < len(data) {
		if !m.set.first[data[i]] {
			i++
			continue
		}
		if m.set.properPrefix(data[i:]) {
			// The rest may still become a value (perhaps a longer one
			// than what matches now): wait for more output.
			hold = i
			break
		}
		if n := m.set.matchAt(data[i:]); n > 0 {
			m.out = append(m.out, data[start:i]...)
			m.out = append(m.out, maskText...)
			i += n
			start = i
			continue
		}
		i++
	}
	m.out = append(m.out, data[start:hold]...)
	m.buf = append(m.buf[:0], data[hold:]...)
	if len(m.out) > 0 {
		m.emit(m.out)
	}
}

// flush emits the held tail: the output ended, it cannot grow into a value.
func (m *maskStream) flush() {
	if len(m.buf) > 0 {
		m.emit(m.buf)
		m.buf = m.buf[:0]
	}
}

// matchAt returns the length of the longest value at the start of b, or 0.
func (s *maskSet) matchAt(b []byte) int {
	for _, v := range s.values {
		if bytes.HasPrefix(b, v) {
			return len(v)
		}
	}
	return 0
}

// properPrefix reports whether b is a proper prefix of a value (shorter
// than it), so more output could complete it.
func (s *maskSet) properPrefix(b []byte) bool {
	if len(b) >= s.maxLen {
		return false
	}
	for _, v := range s.values {
		if len(v) > len(b) && bytes.HasPrefix(v, b) {
			return true
		}
	}
	return false
}

// maskEnvValues returns the values of the named variables, refusing any
// shorter than protocol.MinMaskLen. An unset or empty variable has nothing
// to mask.
func maskEnvValues(names []string, getenv func(string) string) ([]string, error) {
	var values []string
	for _, name := range names {
		v := getenv(name)
		if v == "" {
			continue
		}
		if len(v) < protocol.MinMaskLen {
			return nil, fmt.Errorf("--mask-env %s: the value is %d bytes; values shorter than %d bytes are too short to mask safely", name, len(v), protocol.MinMaskLen)
		}
		values = append(values, v)
	}
	return values, nil
}

// redactMasks returns a rejected command line fit for the record stream:
// a command carrying mask values is echoed without them.
func redactMasks(input string) string {
	var c protocol.Command
	if json.Unmarshal([]byte(input), &c) != nil || len(c.Mask)+len(c.Data) == 0 {
		// (A job's variables travel in a file command's data, never in
		// the job command itself: env_file only names the file.)
		if strings.Contains(input, `"mask"`) || strings.Contains(input, `"data"`) {
			return "(not echoed: the command may carry masked values)"
		}
		return input
	}
	if len(c.Mask) > 0 {
		c.Mask = []string{"(not echoed)"}
	}
	if c.Data != "" {
		c.Data = "(not echoed)"
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "(not echoed: the command may carry masked values)"
	}
	return string(b)
}
