package transfer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tether-ci/tether/integration/actions/internal/shell"
)

// listLoop prints each file (its quoted paths fill in the list) as a header line "F <size> <sha256 or -> <path>", its bytes
// and a newline, or "M <path>" for a file that does not exist, then
// "END". sha256sum is used where the image has it; the size is always
// checked.
const listLoop = `for f in %s; do
  if [ -f "$f" ]; then
    n=$(wc -c < "$f" | tr -d ' ') || exit 1
    s=$( (sha256sum < "$f" 2>/dev/null || echo -) | cut -c1-64)
    printf 'F %%s %%s %%s\n' "$n" "$s" "$f"
    cat "$f" || exit 1
    printf '\n'
  else
    printf 'M %%s\n' "$f"
  fi
done
printf 'END\n'
`

// ListScript is the script that lists the files at paths in listLoop's
// format, which ParseListing reads.
func ListScript(paths []string) []byte {
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = shell.Quote(p)
	}
	return []byte("#!/bin/sh\n" + fmt.Sprintf(listLoop, strings.Join(quoted, " ")))
}

// ParseListing parses one listing in listLoop's format up to its END
// line: the files' contents, the paths of "S <size> <path>" lines (files
// a script of the caller left out) and what follows END (where another
// listing may start). Any mismatch of size or sha256, or a
// missing END, is an error.
func ParseListing(b []byte) (got map[string][]byte, skipped []string, rest []byte, err error) {
	got = map[string][]byte{}
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil, nil, nil, errors.New("the listing ended early (no END line)")
		}
		line := string(b[:i])
		b = b[i+1:]
		switch {
		case line == "END":
			return got, skipped, b, nil
		case strings.HasPrefix(line, "M "):
			continue
		case strings.HasPrefix(line, "S "):
			if f := strings.SplitN(line, " ", 3); len(f) == 3 {
				skipped = append(skipped, f[2]+" ("+f[1]+" bytes)")
			}
			continue
		case strings.HasPrefix(line, "F "):
		default:
			return nil, nil, nil, fmt.Errorf("unexpected line in the listing: %q", line)
		}
		fields := strings.SplitN(line, " ", 4)
		if len(fields) != 4 {
			return nil, nil, nil, fmt.Errorf("malformed header in the listing: %q", line)
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil || n < 0 || n+1 > len(b) {
			return nil, nil, nil, fmt.Errorf("file %s: its size %q does not match what arrived", fields[3], fields[1])
		}
		content, after := b[:n], b[n:]
		if after[0] != '\n' {
			return nil, nil, nil, fmt.Errorf("file %s: more bytes arrived than its size %d", fields[3], n)
		}
		if fields[2] != "-" {
			sum := sha256.Sum256(content)
			if hex.EncodeToString(sum[:]) != fields[2] {
				return nil, nil, nil, fmt.Errorf("file %s: its sha256 does not match what arrived", fields[3])
			}
		}
		got[fields[3]] = bytes.Clone(content)
		b = after[1:]
	}
}
