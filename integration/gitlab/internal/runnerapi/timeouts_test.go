package runnerapi

import (
	"strings"
	"testing"
	"time"
)

// The after_script timeout follows the runner's rules for
// RUNNER_AFTER_SCRIPT_TIMEOUT: a positive Go duration, else the default
// 5m, with a warning for a value the runner ignores.
func TestAfterScriptTimeout(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		warn  string
	}{
		{"", DefaultAfterScriptTimeout, ""},
		{"10m", 10 * time.Minute, ""},
		{" 1h30m ", 90 * time.Minute, ""},
		{"3s", 3 * time.Second, ""},
		{"0s", DefaultAfterScriptTimeout, ""},
		{"600", DefaultAfterScriptTimeout, `ignoring RUNNER_AFTER_SCRIPT_TIMEOUT "600": not a duration`},
		{"soon", DefaultAfterScriptTimeout, `ignoring RUNNER_AFTER_SCRIPT_TIMEOUT "soon": not a duration`},
		{"-1m", DefaultAfterScriptTimeout, `ignoring RUNNER_AFTER_SCRIPT_TIMEOUT "-1m": negative`},
	} {
		env := map[string]string{"CUSTOM_ENV_RUNNER_AFTER_SCRIPT_TIMEOUT": tc.value}
		d, warn := AfterScriptTimeout(func(k string) string { return env[k] })
		if d != tc.want || (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn) {
			t.Errorf("%q: %s, warning %q; want %s, warning containing %q", tc.value, d, warn, tc.want, tc.warn)
		}
	}
}
