// Package version holds the build's version, set by the Makefile's -ldflags.
package version

// Version is the release version of both binaries ("dev" for local builds).
// It is a variable only so that the linker can set it.
var Version = "dev"
