package shim

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpOnStdout: asked-for help is output (stdout, exit 0), not a
// diagnostic.
func TestHelpOnStdout(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		var out, errb bytes.Buffer
		code := Main([]string{arg}, strings.NewReader(""), &out, &errb)
		if code != 0 || !strings.Contains(out.String(), "Usage: tether-shim") || !strings.Contains(out.String(), "--idle-timeout") || errb.Len() != 0 {
			t.Errorf("%s: exit %d stdout %q stderr %q, want 0 and the usage on stdout only", arg, code, out.String(), errb.String())
		}
	}
}
