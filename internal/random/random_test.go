package random

import (
	"encoding/hex"
	"testing"
)

// Hex gives 2n hex digits, never the same twice in a row.
func TestHex(t *testing.T) {
	a, b := Hex(8), Hex(8)
	if len(a) != 16 || a == b {
		t.Fatalf("Hex(8) = %q then %q", a, b)
	}
	if _, err := hex.DecodeString(a); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
}
