package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tether-ci/tether/internal/runcmd"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/integration/gitlab"
)

// The flag tables of --help line up: every description starts in the
// same column (pflag pads by bytes, so a value name with a multi-byte
// character such as … shifts its line), and no flag shows a default of
// its own that contradicts its text (termination-grace-period's 0s).
func TestHelpFlagTables(t *testing.T) {
	for name, fs := range map[string]*pflag.FlagSet{
		"run":    runcmd.NewFlagSet(&runcmd.Flags{}),
		"gitlab": gitlab.NewFlagSet(&gitlab.Settings{}),
	} {
		col := -1
		for _, line := range strings.Split(strings.TrimRight(fs.FlagUsages(), "\n"), "\n") {
			flagPart := strings.TrimLeft(line, " ")
			i := strings.Index(flagPart, "   ")
			if i < 0 {
				t.Errorf("%s: line without a description column: %q", name, line)
				continue
			}
			rest := flagPart[i:]
			start := utf8.RuneCountInString(line) - utf8.RuneCountInString(strings.TrimLeft(rest, " "))
			if col < 0 {
				col = start
			}
			if start != col {
				t.Errorf("%s: description at column %d, want %d: %q", name, start, col, line)
			}
			if strings.Contains(line, "--termination-grace-period") && strings.Contains(line, "(default 0s)") {
				t.Errorf("%s: %q shows a default of 0s beside Kubernetes' 30s", name, line)
			}
		}
	}
}
