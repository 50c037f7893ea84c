package main

import (
	"fmt"
	"slices"
	"time"
)

// durations is a set of measurements of one thing.
type durations []time.Duration

func (d durations) sorted() durations {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

// median returns the middle value (the mean of the two middle values for
// an even count).
func (d durations) median() time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := d.sorted()
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100).
func (d durations) percentile(p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := d.sorted()
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

func (d durations) min() time.Duration { return slices.Min(d) }
func (d durations) max() time.Duration { return slices.Max(d) }

// throughput is bytes per second as GiB/s.
func throughput(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / (1 << 30)
}

// ms formats a duration in milliseconds with a precision that suits it.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f < 1:
		return fmt.Sprintf("%.3f ms", f)
	case f < 100:
		return fmt.Sprintf("%.1f ms", f)
	case f < 10000:
		return fmt.Sprintf("%.0f ms", f)
	}
	return fmt.Sprintf("%.1f s", f/1000)
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// gib formats bytes in GiB (or MiB below one GiB).
func gib(b int64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.3g GiB", float64(b)/(1<<30))
}
