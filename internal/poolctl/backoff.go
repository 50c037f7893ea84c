package poolctl

import "time"

// backoff is a pool's wait after pods could not be created or started:
// base, doubled per failure in a row, at most max.
type backoff struct {
	failures int
	until    time.Time
}

// fail records a failure at now and returns the wait before the next try.
func (b *backoff) fail(now time.Time, base, max time.Duration) time.Duration {
	b.failures++
	d := base
	for i := 1; i < b.failures && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	b.until = now.Add(d)
	return d
}

// wait is how long to wait before trying again at now (0: try).
func (b *backoff) wait(now time.Time) time.Duration {
	return max(b.until.Sub(now), 0)
}

// succeed ends the failures in a row.
func (b *backoff) succeed() { b.failures, b.until = 0, time.Time{} }
