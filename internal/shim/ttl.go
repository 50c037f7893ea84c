package shim

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// readTTL returns the TTL annotation from a downward-API annotations file
// (lines of key="value", the value quoted as by Go's %q). ok is false when
// the file has no such annotation. A malformed value is an error, never 0.
func readTTL(path string) (ttl time.Duration, ok bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false, fmt.Errorf("read TTL annotations file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		key, quoted, found := strings.Cut(sc.Text(), "=")
		if !found || key != TTLAnnotation {
			continue
		}
		value, err := strconv.Unquote(quoted)
		if err != nil {
			value = quoted
		}
		secs, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil || secs < 0 || secs > 10*365*24*3600 {
			return 0, false, fmt.Errorf("annotation %s=%q is not a whole number of seconds; ignoring it", TTLAnnotation, value)
		}
		return time.Duration(secs) * time.Second, true, nil
	}
	return 0, false, sc.Err()
}
