package settings

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Grace is a --termination-grace-period value: whole seconds ("30", as
// GitLab's pod_termination_grace_period_seconds) or a Go duration ("30s",
// "1m"), from 1s to 24h; 0 means "not set" (Kubernetes' default applies).
type Grace time.Duration

// String returns the value as a Go duration ("" when unset, so the help
// text shows no default of its own beside Kubernetes').
func (g *Grace) String() string {
	if *g == 0 {
		return ""
	}
	return time.Duration(*g).String()
}

// Type names the value in the help text.
func (g *Grace) Type() string { return "SECONDS|DURATION" }

// Set parses whole seconds or a duration of whole seconds, at least 1s.
// (0 is refused: a pod with terminationGracePeriodSeconds 0 is removed from
// the API at once, before its containers have stopped.)
func (g *Grace) Set(s string) error {
	d, err := time.ParseDuration(s)
	if n, nerr := strconv.ParseInt(s, 10, 64); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
		if n > int64(maxGrace/time.Second) {
			d = maxGrace + time.Second
		}
	}
	if err != nil {
		return errors.New("want whole seconds (30) or a duration (30s, 2m)")
	}
	if err := checkGrace(d); err != nil {
		return err
	}
	*g = Grace(d)
	return nil
}

// checkGrace checks a grace that is set: whole seconds, 1s to maxGrace.
func checkGrace(d time.Duration) error {
	switch {
	case d < time.Second:
		return errors.New("want at least 1s (Kubernetes removes a pod with a grace of 0 before its containers stop)")
	case d%time.Second != 0:
		return errors.New("want whole seconds (Kubernetes counts the grace in seconds)")
	case d > maxGrace:
		return fmt.Errorf("want at most %s", maxGrace)
	}
	return nil
}

// maxGrace bounds --termination-grace-period: a grace longer than a day is
// a mistake (the pod would keep terminating for it).
const maxGrace = 24 * time.Hour
