package protocol

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// plainPrefixBytewise is the obvious definition plainPrefix must match.
func plainPrefixBytewise(src []byte) int {
	i := 0
	for i < len(src) && plain[src[i]] {
		i++
	}
	return i
}

// TestPlainPrefixMatchesBytewise checks the word-at-a-time scan against the
// byte-by-byte definition on inputs dense in the bytes its tricks are about:
// the bounds of the plain range, TAB and ESC (plain below 0x20), backslash,
// newline and bytes >= 0x80, at every length and alignment up to 100.
func TestPlainPrefixMatchesBytewise(t *testing.T) {
	edges := []byte{'\t', 0x1b, '\\', '\n', 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xff, 0x00, 0x01, 0x5b, 0x5d}
	rng := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 128)
	for round := range 200000 {
		n := rng.IntN(101)
		off := rng.IntN(8)
		src := buf[off : off+n]
		for i := range src {
			src[i] = 'a' + byte(rng.IntN(26))
		}
		// From none to a few edge bytes, anywhere.
		for range rng.IntN(4) {
			if n > 0 {
				src[rng.IntN(n)] = edges[rng.IntN(len(edges))]
			}
		}
		if got, want := plainPrefix(src), plainPrefixBytewise(src); got != want {
			t.Fatalf("round %d: plainPrefix(%q) = %d, want %d", round, src, got, want)
		}
	}
}

// TestRuneLenMatchesDecodeRune checks the inline UTF-8 validation against
// utf8.DecodeRune for every lead byte it is called with, every
// continuation byte after it, and every third byte (with a few fourth
// bytes), including short inputs.
func TestRuneLenMatchesDecodeRune(t *testing.T) {
	for b0 := 0xc2; b0 <= 0xf4; b0++ {
		for b1 := 0x80; b1 <= 0xbf; b1++ {
			for b2 := -1; b2 <= 0xff; b2++ {
				for _, b3 := range []int{-1, 0x00, 0x7f, 0x80, 0xbf, 0xc0} {
					s := []byte{byte(b0), byte(b1)}
					if b2 >= 0 {
						s = append(s, byte(b2))
						if b3 >= 0 {
							s = append(s, byte(b3))
						}
					} else if b3 >= 0 {
						continue
					}
					want := 0
					if r, n := utf8.DecodeRune(s); r != utf8.RuneError || n > 1 {
						want = n
					}
					if got := runeLen(s); got != want {
						t.Fatalf("runeLen(% x) = %d, want %d", s, got, want)
					}
				}
			}
		}
	}
}
