//go:build !race

package testbin

// raceBuild: this test binary runs without the race detector.
const raceBuild = false
