package gc

import (
	"errors"
	"testing"
	"time"
)

func TestParseTTL(t *testing.T) {
	valid := map[string]int64{
		"0":                   0,
		"1":                   1,
		"3600":                3600,
		"11700":               11700,
		"007":                 7,
		"9223372036854775807": 9223372036854775807,
	}
	for in, want := range valid {
		got, err := ParseTTL(in)
		if err != nil || got != want {
			t.Errorf("ParseTTL(%q) = %d, %v; want %d, nil", in, got, err, want)
		}
	}
	malformed := []string{
		"", " ", "-5", "+5", "1e3", "1.5", "abc", "10s", "1h", " 60", "60 ", "6 0", "0x10", "٣", // Arabic-Indic digit three
		"9223372036854775808", "99999999999999999999999999", "3600\n",
	}
	for _, in := range malformed {
		got, err := ParseTTL(in)
		if err == nil {
			t.Errorf("ParseTTL(%q) = %d, nil; want an error", in, got)
			continue
		}
		if !errors.Is(err, ErrMalformedTTL) {
			t.Errorf("ParseTTL(%q) error %v does not wrap ErrMalformedTTL", in, err)
		}
		if got != 0 {
			t.Errorf("ParseTTL(%q) returned %d with its error", in, got)
		}
	}
}

func TestDecideTTL(t *testing.T) {
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ann := func(v string) map[string]string { return map[string]string{TTLAnnotation: v} }
	cases := []struct {
		name    string
		ann     map[string]string
		created time.Time
		now     time.Time
		want    TTLState
		overdue time.Duration
	}{
		{"no annotations", nil, created, created.Add(1000 * time.Hour), NoTTL, 0},
		{"other annotation only", map[string]string{"ttl": "1"}, created, created.Add(time.Hour), NoTTL, 0},
		{"young", ann("3600"), created, created.Add(30 * time.Minute), Alive, 0},
		{"exactly at deadline is not expired", ann("3600"), created, created.Add(time.Hour), Alive, 0},
		{"1ns after deadline", ann("3600"), created, created.Add(time.Hour + 1), Expired, 1},
		{"1s before deadline", ann("3600"), created, created.Add(time.Hour - time.Second), Alive, 0},
		{"seed example: 3h20m old, ttl 11700", ann("11700"), created, created.Add(3*time.Hour + 20*time.Minute), Expired, 5 * time.Minute},
		{"seed example: 1h old, ttl 11700", ann("11700"), created, created.Add(time.Hour), Alive, 0},
		{"ttl 0 expires right after creation", ann("0"), created, created.Add(time.Millisecond), Expired, time.Millisecond},
		{"ttl 0 at creation instant", ann("0"), created, created, Alive, 0},
		{"creation in the future (clock skew)", ann("0"), created, created.Add(-time.Minute), Alive, 0},
		{"creation far in the future", ann("1"), created, created.Add(-100 * 24 * time.Hour), Alive, 0},
		{"huge ttl beyond a Duration never expires", ann("9223372036854775807"), created, created.Add(200 * 365 * 24 * time.Hour), Alive, 0},
		{"ttl just beyond a Duration", ann("9223372037"), time.Unix(0, 0), time.Unix(1<<62, 0), Alive, 0},
		{"largest Duration ttl, ancient pod", ann("9223372036"), time.Unix(-1<<40, 0), time.Unix(1<<40, 0), Expired, -1},
		{"malformed empty", ann(""), created, created.Add(1000 * time.Hour), Malformed, 0},
		{"malformed negative", ann("-5"), created, created.Add(1000 * time.Hour), Malformed, 0},
		{"malformed exponent", ann("1e3"), created, created.Add(1000 * time.Hour), Malformed, 0},
		{"malformed word", ann("abc"), created, created.Add(1000 * time.Hour), Malformed, 0},
		{"malformed huge", ann("123456789012345678901234567890"), created, created.Add(1000 * time.Hour), Malformed, 0},
		{"zero creation time", ann("1"), time.Time{}, created, Malformed, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideTTL(tc.ann, tc.created, tc.now)
			if d.State != tc.want {
				t.Fatalf("state = %v (%+v), want %v", d.State, d, tc.want)
			}
			if (d.State == Malformed) != (d.Err != nil) {
				t.Errorf("Err = %v with state %v", d.Err, d.State)
			}
			if tc.overdue >= 0 && d.Overdue != tc.overdue {
				t.Errorf("overdue = %v, want %v", d.Overdue, tc.overdue)
			}
			if d.State == Expired && d.Overdue <= 0 {
				t.Errorf("expired with overdue %v", d.Overdue)
			}
		})
	}
}

// Every TTL from 0 to 100 s flips from Alive to Expired exactly one
// nanosecond after creation + TTL.
func TestDecideTTLBoundarySweep(t *testing.T) {
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for ttl := int64(0); ttl <= 100; ttl++ {
		a := map[string]string{TTLAnnotation: itoa(ttl)}
		at := created.Add(time.Duration(ttl) * time.Second)
		if s := DecideTTL(a, created, at).State; s != Alive {
			t.Fatalf("ttl %d at deadline: %v, want alive", ttl, s)
		}
		if s := DecideTTL(a, created, at.Add(time.Nanosecond)).State; s != Expired {
			t.Fatalf("ttl %d 1ns after deadline: %v, want expired", ttl, s)
		}
	}
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func FuzzParseTTL(f *testing.F) {
	for _, s := range []string{"", "0", "3600", "-5", "1e3", "abc", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseTTL(s)
		if err != nil {
			if n != 0 {
				t.Fatalf("error with value %d", n)
			}
			return
		}
		if n < 0 || itoa(n) != trimZeros(s) {
			t.Fatalf("ParseTTL(%q) = %d", s, n)
		}
	})
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

// GitLab's pod cleaner annotation (a duration) counts when Tether's own is
// absent; Tether's wins when both are there; a bad duration is malformed.
func TestDecideTTLGitLabAnnotation(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := created.Add(2 * time.Hour)
	for _, tc := range []struct {
		ann  map[string]string
		want TTLState
		ttl  int64
	}{
		{map[string]string{GitLabTTLAnnotation: "1h"}, Expired, 3600},
		{map[string]string{GitLabTTLAnnotation: "3h"}, Alive, 10800},
		{map[string]string{GitLabTTLAnnotation: "90m", TTLAnnotation: "86400"}, Alive, 86400},
		{map[string]string{GitLabTTLAnnotation: "1.5s"}, Expired, 2},
		{map[string]string{GitLabTTLAnnotation: "soon"}, Malformed, 0},
		{map[string]string{GitLabTTLAnnotation: "-1h"}, Malformed, 0},
		{map[string]string{"other": "1h"}, NoTTL, 0},
	} {
		d := DecideTTL(tc.ann, created, now)
		if d.State != tc.want || (tc.want != Malformed && d.TTLSeconds != tc.ttl) {
			t.Errorf("%v: %v ttl %d (%v), want %v ttl %d", tc.ann, d.State, d.TTLSeconds, d.Err, tc.want, tc.ttl)
		}
	}
}
