// Package version holds the build's version, set by the Makefile's -ldflags.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release version of both binaries ("dev" for local builds).
// It is a variable only so that the linker can set it; read it with Get.
var Version = "dev"

// Get returns the build's version: Version when the linker set it (make
// build, make release), else the main module's version that
// `go install github.com/tether-ci/tether/cmd/...@v1.2.3` records in the
// binary, else "dev".
func Get() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	return resolve(Version, info.Main.Version)
}

// resolve picks the version from the linker's and the module's.
func resolve(linked, module string) string {
	if linked != "dev" && linked != "" {
		return linked
	}
	if module != "" && module != "(devel)" {
		return module
	}
	return "dev"
}

// UserAgent is the User-Agent header of every Kubernetes API request
// Tether makes: "tether/VERSION (OS/ARCH)", followed by the integration
// that makes it ("gitlab", "actions", "run", "gc", ...) when one is given,
// so an API server's audit log tells Tether's requests from others and
// one integration's from another's.
func UserAgent(integration string) string {
	ua := "tether/" + Get() + " (" + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if integration != "" {
		ua += " " + integration
	}
	return ua
}
