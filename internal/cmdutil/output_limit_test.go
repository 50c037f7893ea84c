package cmdutil

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1MiB": 1 << 20, "500k": 500000, "2GB": 2e9, "1.5KiB": 1536, "42": 42, "10 MB": 1e7} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MB", "-1", "3 parsecs"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
