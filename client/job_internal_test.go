package client

import (
	"testing"
	"time"
)

// Job.AfterTimeout travels in whole milliseconds: a positive budget never
// rounds down to 0 (which would mean "the shim's default"), and any
// negative one means "none".
func TestAfterTimeoutMS(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0: 0, time.Nanosecond: 1, 1500 * time.Millisecond: 1500, 5 * time.Minute: 300000,
		-time.Nanosecond: -1, -time.Hour: -1,
	} {
		if got := afterTimeoutMS(d); got != want {
			t.Errorf("afterTimeoutMS(%v) = %d, want %d", d, got, want)
		}
	}
}
