package main

import "testing"

func TestOOMText(t *testing.T) {
	for limit, want := range map[int64]string{
		0:         "out of memory",
		64 << 20:  "out of memory (limit 64Mi)",
		1 << 30:   "out of memory (limit 1Gi)",
		100000000: "out of memory (limit 100M)",
	} {
		if got := oomText(limit); got != want {
			t.Errorf("oomText(%d) = %q, want %q", limit, got, want)
		}
	}
}
