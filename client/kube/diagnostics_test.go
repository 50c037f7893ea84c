package kube

import (
	"strings"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

// blockRecord encodes payload as one block record (the stream's first), as
// the shim writes bulk output.
func blockRecord(payload string) string {
	return string(protocol.NewEncoder().AppendBlocks(nil, []byte(payload)))
}

func TestDiagnostics(t *testing.T) {
	records := "h 0 {\"protocol\":2}\nb 20 {\"script\":\"/tether/scripts/00-build.sh\"}\no 70 compiling\n"
	panicTail := "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:5 +0x1d\nexit status 2\n"
	many := ""
	for i := range 8 {
		many += "level=WARN msg=\"line " + string(rune('a'+i)) + "\"\n"
	}
	long := strings.Repeat("é", 2000) // 4000 bytes, two per rune
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"a diagnostic after the records", records + "tether-shim: a diagnostic line\n", "tether-shim: a diagnostic line"},
		{"records only", records, ""},
		{"no trailing newline", records + "tether-shim: cannot read stdin", "tether-shim: cannot read stdin"},
		{"lines before the last record are not why it ended", "level=WARN msg=early\n" + records + "fatal error: out of memory\n", "fatal error: out of memory"},
		{"a panic keeps its message, not its traces", records + panicTail, "panic: runtime error: index out of range [3] with length 3"},
		{"no record at all: every line", "flag provided but not defined: -x\nusage: tether-shim [flags]\n", "flag provided but not defined: -x; usage: tether-shim [flags]"},
		{"the last lines, counting the others", records + many, "(3 earlier lines in the container's log) " +
			`level=WARN msg="line d"; level=WARN msg="line e"; level=WARN msg="line f"; level=WARN msg="line g"; level=WARN msg="line h"`},
		{"a torn first line is not a record", "ipt\":\"x\"}\n" + records + "tether-shim: bye\n", "tether-shim: bye"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := diagnostics(tc.msg); got != tc.want {
				t.Errorf("diagnostics:\n got %q\nwant %q", got, tc.want)
			}
		})
	}

	t.Run("block payloads are the script's output", func(t *testing.T) {
		payload := strings.Repeat("panic: not the shim's\nlevel=ERROR msg=\"the script's own\"\n", 40) + "partial"
		msg := records + blockRecord(payload) + "o 99999 after\ntether-shim: the real reason\n"
		if got := diagnostics(msg); got != "tether-shim: the real reason" {
			t.Errorf("diagnostics %q; want only the line after the last record", got)
		}
		// A tail that ends inside a block: its payload is no diagnostic.
		if got := diagnostics(records + blockRecord(payload)[:600]); got != "" {
			t.Errorf("diagnostics of a tail ending inside a block: %q; want none", got)
		}
	})

	t.Run("one line longer than the limit: its end", func(t *testing.T) {
		got := diagnostics(records + long + "\n")
		if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "éé") {
			t.Fatalf("diagnostics %.80q…; want the line's end, marked as cut", got)
		}
		if n := len(got); n > diagnosticBytes+64 {
			t.Errorf("diagnostics of %d bytes; want at most about %d", n, diagnosticBytes)
		}
		if !strings.HasSuffix(got, long[len(long)-diagnosticBytes:]) {
			t.Errorf("diagnostics does not end with the line's last %d bytes", diagnosticBytes)
		}
	})
}
