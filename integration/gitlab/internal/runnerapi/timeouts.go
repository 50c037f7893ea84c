package runnerapi

import (
	"fmt"
	"strings"
	"time"
)

// AfterScriptStage is the stage that runs the job's after_script.
const AfterScriptStage = "after_script"

// AfterScriptTimeoutVar is the job variable that bounds the after_script
// stage (GitLab Runner 16.4 and later), a Go duration such as 10m.
const AfterScriptTimeoutVar = "RUNNER_AFTER_SCRIPT_TIMEOUT"

// DefaultAfterScriptTimeout is the runner's after_script timeout when the
// job sets none.
const DefaultAfterScriptTimeout = 5 * time.Minute

// AfterScriptTimeout returns the after_script stage's own timeout as the
// runner computes it from the job's RUNNER_AFTER_SCRIPT_TIMEOUT: the
// duration when it is a positive Go duration, else the default, 5m. For a
// value the runner ignores (not a duration, or negative) warning says so,
// naming the variable; an empty or zero value takes the default silently,
// as the runner does. (The runner also clamps it to the job's remaining
// time; the job's own timeout is enforced separately.)
func AfterScriptTimeout(getenv func(string) string) (d time.Duration, warning string) {
	raw := strings.TrimSpace(Env(getenv, AfterScriptTimeoutVar))
	if raw == "" {
		return DefaultAfterScriptTimeout, ""
	}
	d, err := time.ParseDuration(raw)
	switch {
	case err != nil:
		return DefaultAfterScriptTimeout, fmt.Sprintf("ignoring %s %q: not a duration (e.g. 10m, 1h30m); after_script gets the default %s", AfterScriptTimeoutVar, raw, DefaultAfterScriptTimeout)
	case d < 0:
		return DefaultAfterScriptTimeout, fmt.Sprintf("ignoring %s %q: negative; after_script gets the default %s", AfterScriptTimeoutVar, raw, DefaultAfterScriptTimeout)
	case d == 0:
		return DefaultAfterScriptTimeout, ""
	}
	return d, ""
}
