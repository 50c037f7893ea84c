package shim

import (
	"math/rand/v2"
	"net/url"
	"testing"
)

// checkURLEscape compares urlEscape with net/url's two escapes for s.
func checkURLEscape(t *testing.T, s string) {
	t.Helper()
	if got, want := urlEscape(s, true), url.QueryEscape(s); got != want {
		t.Fatalf("urlEscape(%q, query) = %q, url.QueryEscape gives %q", s, got, want)
	}
	if got, want := urlEscape(s, false), url.PathEscape(s); got != want {
		t.Fatalf("urlEscape(%q, path) = %q, url.PathEscape gives %q", s, got, want)
	}
}

func TestURLEscapeMatchesNetURL(t *testing.T) {
	checkURLEscape(t, "")
	for a := range 256 {
		for b := range 256 {
			checkURLEscape(t, string([]byte{byte(a), byte(b)}))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		checkURLEscape(t, string(b))
	}
	checkURLEscape(t, "p@ss w/rd?&=+$;,:#%~ü")
}

func FuzzURLEscapeMatchesNetURL(f *testing.F) {
	f.Add("p@ss w/rd?&=+$;,:#%~ü")
	f.Add("\x00\xff")
	f.Fuzz(checkURLEscape)
}
