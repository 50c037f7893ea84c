package gc

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tether-ci/tether/internal/contract"
)

// TTLAnnotation is the pod annotation whose value is the pod's time to live in
// whole seconds, counted from the pod's creation time.
const TTLAnnotation = contract.AnnotationTTL

// GitLabTTLAnnotation is GitLab's pod cleaner's annotation: a duration
// ("1h30m") counted from the pod's creation, honoured when TTLAnnotation is
// absent.
const GitLabTTLAnnotation = contract.AnnotationGitLabPodCleanupTTL

// maxTTLSeconds is the largest TTL that fits in a time.Duration. A pod's age
// is a time.Duration, so a larger TTL can never expire.
const maxTTLSeconds = math.MaxInt64 / int64(time.Second)

// ErrMalformedTTL is wrapped by every error ParseTTL returns.
var ErrMalformedTTL = errors.New("malformed ttl")

// ParseTTL parses a TTL annotation value: one or more ASCII digits, nothing
// else (no sign, space, exponent or unit), at most math.MaxInt64. A malformed
// value is an error wrapping ErrMalformedTTL — never a TTL of 0.
func ParseTTL(value string) (seconds int64, err error) {
	if value == "" {
		return 0, fmt.Errorf("%w: empty value (want whole seconds, e.g. \"3600\")", ErrMalformedTTL)
	}
	for i := 0; i < len(value); i++ {
		if value[i] < '0' || value[i] > '9' {
			return 0, fmt.Errorf("%w: %q is not a whole number of seconds (only digits 0-9 allowed)", ErrMalformedTTL, value)
		}
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is out of range (at most %d seconds)", ErrMalformedTTL, value, int64(math.MaxInt64))
	}
	return n, nil
}

// parseGitLabTTL parses the GitLab pod cleaner's annotation: a positive Go
// duration, rounded up to whole seconds.
func parseGitLabTTL(value string) (int64, error) {
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: %s %q is not a positive duration (e.g. \"1h30m\")", ErrMalformedTTL, GitLabTTLAnnotation, value)
	}
	return int64((d + time.Second - 1) / time.Second), nil
}

// TTLState is the outcome of applying the TTL rule to one pod.
type TTLState int

const (
	// NoTTL: the pod has no TTL annotation; the cleaner never touches it.
	NoTTL TTLState = iota
	// Malformed: the annotation (or the creation time) cannot be used; the
	// pod is reported and skipped.
	Malformed
	// Alive: the TTL has not passed yet (or the pod was created in the
	// future as seen by this clock).
	Alive
	// Expired: creation time + TTL is in the past; the pod is deleted.
	Expired
)

// String names the state for reports.
func (s TTLState) String() string {
	switch s {
	case NoTTL:
		return "no-ttl"
	case Malformed:
		return "malformed"
	case Alive:
		return "alive"
	case Expired:
		return "expired"
	}
	return fmt.Sprintf("TTLState(%d)", int(s))
}

// TTLDecision is the result of DecideTTL.
type TTLDecision struct {
	State TTLState
	// TTLSeconds is the parsed annotation (valid for Alive and Expired).
	TTLSeconds int64
	// Age is now minus the creation time; negative when the creation time
	// is in the future (clock skew between this host and the apiserver).
	Age time.Duration
	// Overdue is how long ago the TTL ran out (Expired only).
	Overdue time.Duration
	// Err says why the pod is Malformed.
	Err error
}

// DecideTTL applies the TTL rule to a pod's annotations and creation time.
// The pod is Expired when now is strictly after created + TTL. A creation
// time in the future never expires a pod, and neither does a missing (zero)
// creation time.
func DecideTTL(annotations map[string]string, created, now time.Time) TTLDecision {
	value, ok := annotations[TTLAnnotation]
	var ttl int64
	var err error
	switch {
	case ok:
		ttl, err = ParseTTL(value)
	default:
		gl, glOK := annotations[GitLabTTLAnnotation]
		if !glOK {
			return TTLDecision{State: NoTTL}
		}
		ttl, err = parseGitLabTTL(gl)
	}
	if err != nil {
		return TTLDecision{State: Malformed, Err: err}
	}
	if created.IsZero() {
		return TTLDecision{State: Malformed, TTLSeconds: ttl,
			Err: errors.New("object has no creation timestamp; cannot tell its age")}
	}
	d := TTLDecision{State: Alive, TTLSeconds: ttl, Age: now.Sub(created)}
	if ttl > maxTTLSeconds || d.Age < 0 {
		return d
	}
	if over := d.Age - time.Duration(ttl)*time.Second; over > 0 {
		d.State, d.Overdue = Expired, over
	}
	return d
}
