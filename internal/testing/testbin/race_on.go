//go:build race

package testbin

// raceBuild: this test binary runs under the race detector, so the
// programs it runs as processes are built with it too.
const raceBuild = true
