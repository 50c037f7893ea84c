// Package random makes the random names and nonces of the client and its
// Kubernetes backend (job IDs, pod names, stream nonces).
package random

import (
	"crypto/rand"
	"encoding/hex"
)

// Hex returns n random bytes, hex-encoded (2n digits).
func Hex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
