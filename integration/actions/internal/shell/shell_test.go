package shell

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// SplitArgs undoes the runner's split on single spaces the way sh would
// split the re-joined string (checked against a real sh).
func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		pieces []string
		want   []string
	}{
		{[]string{"-e", "/__w/_temp/a.sh"}, []string{"-e", "/__w/_temp/a.sh"}},
		{[]string{`"hello`, `world"`, "x"}, []string{"hello world", "x"}},
		{[]string{`'it''s'`, `a\ b`}, []string{"its", "a b"}},
		{[]string{`"a\"b"`, `"$x"`}, []string{`a"b`, "$x"}},
		{[]string{`""`}, []string{""}},
		{nil, nil},
	} {
		got, err := SplitArgs(tc.pieces)
		if err != nil {
			t.Fatalf("%q: %v", tc.pieces, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.pieces, got, tc.want)
		}
		if strings.Contains(strings.Join(tc.pieces, " "), "$") {
			continue // sh would expand it; splitArgs does not, on purpose
		}
		sh, err := exec.Command("sh", "-c", "set -- "+strings.Join(tc.pieces, " ")+`; for a in "$@"; do printf '%s\0' "$a"; done`).Output()
		if err != nil {
			t.Fatal(err)
		}
		var shArgs []string
		for _, a := range strings.SplitAfter(string(sh), "\x00") {
			if a != "" {
				shArgs = append(shArgs, strings.TrimSuffix(a, "\x00"))
			}
		}
		if !reflect.DeepEqual(shArgs, tc.want) {
			t.Errorf("%q: sh splits it into %q, the test wants %q", tc.pieces, shArgs, tc.want)
		}
	}
	for _, bad := range [][]string{{`"open`}, {`'open`}} {
		if _, err := SplitArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// shellQuote's output is read back by sh as the same bytes.
func TestShellQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", `a "b" $c \d`, "line\nbreak", "'''"} {
		out, err := exec.Command("sh", "-c", "printf '%s' "+Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("%q: sh printed %q (%v)", s, out, err)
		}
	}
}
