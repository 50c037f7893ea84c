package version

import (
	"runtime"
	"testing"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct{ linked, module, want string }{
		{"v1.2.3", "(devel)", "v1.2.3"},               // make release in a clone
		{"v1.2.3", "v1.2.2", "v1.2.3"},                // the linker wins
		{"dev", "v1.2.3", "v1.2.3"},                   // go install ...@v1.2.3
		{"dev", "(devel)", "dev"},                     // go build in a clone
		{"dev", "", "dev"},                            // no module information
		{"9dcbf13-dirty", "(devel)", "9dcbf13-dirty"}, // make build between tags
	} {
		if got := resolve(tc.linked, tc.module); got != tc.want {
			t.Errorf("resolve(%q, %q) = %q, want %q", tc.linked, tc.module, got, tc.want)
		}
	}
	// A test binary has no linker-set version and no module version.
	if got := Get(); got != "dev" {
		t.Errorf("Get() = %q in a test binary, want dev", got)
	}
}

func TestUserAgent(t *testing.T) {
	want := "tether/dev (" + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if got := UserAgent(""); got != want {
		t.Errorf("UserAgent(\"\") = %q, want %q", got, want)
	}
	if got := UserAgent("gitlab"); got != want+" gitlab" {
		t.Errorf("UserAgent(\"gitlab\") = %q, want %q", got, want+" gitlab")
	}
}
