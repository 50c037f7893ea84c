package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Every command of the table answers `tether help CMD` (and its aliases
// do), is in the usage and in the completions; an unknown one is a usage
// error.
func TestEveryCommandHasHelp(t *testing.T) {
	ctx := context.Background()
	usage := usageText()
	bash, fish := bashCompletion(), fishCompletion()
	for _, c := range commands() {
		for _, name := range append([]string{c.name}, c.aliases...) {
			var out, errOut bytes.Buffer
			if code := realMain(ctx, []string{"help", name}, &out, &errOut); code != 0 || out.Len() == 0 || errOut.Len() != 0 {
				t.Errorf("tether help %s: exit %d, stdout %d bytes, stderr %q", name, code, out.Len(), errOut.String())
			}
		}
		if !strings.Contains(usage, "  tether "+c.synopsis) || !strings.Contains(usage, c.summary) {
			t.Errorf("the usage lacks %s:\n%s", c.name, usage)
		}
		if !strings.Contains(bash, " "+c.name+" ") && !strings.Contains(bash, `"`+c.name+" ") && !strings.Contains(bash, " "+c.name+`"`) {
			t.Errorf("the bash completion does not offer %s", c.name)
		}
		if !strings.Contains(fish, c.name) {
			t.Errorf("the fish completion does not offer %s", c.name)
		}
	}
	var out, errOut bytes.Buffer
	if code := realMain(ctx, []string{"help", "explode"}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), `unknown command "explode"`) {
		t.Errorf("tether help explode: exit %d, stderr %q", code, errOut.String())
	}
}
