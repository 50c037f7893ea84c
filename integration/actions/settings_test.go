package actions

import (
	"strings"
	"testing"
	"time"
)

// Every malformed variable is reported at once, each by name, and the
// well-formed ones still apply.
func TestSettingsFromEnvReportsEveryBadVariable(t *testing.T) {
	env := map[string]string{
		EnvPullPolicy:       "Sometimes",
		EnvJobTimeout:       "forever",
		EnvIdleTimeout:      "-1s",
		EnvPrepareTimeout:   "0",
		EnvNodeSelector:     "novalue",
		EnvConfig:           "/nonexistent/tether-actions.yaml",
		EnvReconnectTimeout: "90s",
	}
	s, err := SettingsFromEnv(func(k string) string { return env[k] })
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{EnvPullPolicy, EnvJobTimeout, EnvIdleTimeout, EnvPrepareTimeout, EnvNodeSelector, EnvConfig} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 6 {
		t.Errorf("error has %d lines, want one per bad variable (6):\n%s", n, err)
	}
	if s.ReconnectTimeout != 90*time.Second || s.JobTimeout != DefaultJobTimeout {
		t.Errorf("reconnect %s job timeout %s: want the good value applied and the default kept for the bad one", s.ReconnectTimeout, s.JobTimeout)
	}
	if _, err := SettingsFromEnv(func(string) string { return "" }); err != nil {
		t.Errorf("an empty environment: %v", err)
	}
}
