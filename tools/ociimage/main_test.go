package main

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/ociimage"
)

// staticBinary builds a tiny static program for linux/arch.
func staticBinary(t *testing.T, arch string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "prog")
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// A good run writes the named index; it prints REF@DIGEST.
func TestWritesTheImage(t *testing.T) {
	amd, arm := staticBinary(t, "amd64"), staticBinary(t, "arm64")
	out := filepath.Join(t.TempDir(), "img.tar")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--image", "tether-shim", "--tag", "v1.0.0", "--created", "1700000000",
		"--binary", "linux/amd64=" + amd, "--binary", "linux/arm64=" + arm, "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	ref := contract.ShimImageRepository + ":v1.0.0"
	if !strings.HasPrefix(stdout.String(), ref+"@sha256:") {
		t.Errorf("stdout %q, want %s@sha256:…", stdout.String(), ref)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := ociimage.ReadArchive(f)
	if err != nil {
		t.Fatal(err)
	}
	top, imgs, err := a.Images(ref)
	if err != nil || len(imgs) != 2 {
		t.Fatalf("%v, %d platforms", err, len(imgs))
	}
	if !strings.HasSuffix(strings.TrimSpace(stdout.String()), top.Digest) {
		t.Errorf("printed %q, the index is %s", stdout.String(), top.Digest)
	}
	if imgs[0].Config.Config.Labels["org.opencontainers.image.version"] != "v1.0.0" || imgs[0].Config.Created != "2023-11-14T22:13:20Z" {
		t.Errorf("config %+v", imgs[0].Config)
	}
}

// The tether image carries tether-pool and tether-stage beside tether, on
// every platform.
func TestTetherImageCarriesItsCompanions(t *testing.T) {
	amd, arm := staticBinary(t, "amd64"), staticBinary(t, "arm64")
	out := filepath.Join(t.TempDir(), "img.tar")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--image", "tether", "--tag", "v1.0.0", "--binary", "linux/amd64=" + amd, "--binary", "linux/arm64=" + arm,
		"--binary", "tether-pool:linux/amd64=" + amd, "--binary", "tether-pool:linux/arm64=" + arm,
		"--binary", "tether-stage:linux/amd64=" + amd, "--binary", "tether-stage:linux/arm64=" + arm, "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := ociimage.ReadArchive(f)
	if err != nil {
		t.Fatal(err)
	}
	_, imgs, err := a.Images(contract.CLIImageRepository + ":v1.0.0")
	if err != nil || len(imgs) != 2 {
		t.Fatalf("%v, %d platforms", err, len(imgs))
	}
	for _, img := range imgs {
		stage, ok := img.Files["/tether-stage"]
		pool, okPool := img.Files["/tether-pool"]
		if _, own := img.Files["/tether"]; !own || !ok || !okPool || stage.Mode != 0o755 || pool.Mode != 0o755 || len(img.Files) != 3 {
			t.Errorf("%s: files %v; want /tether, /tether-pool and /tether-stage (0755)", img.Platform, slices.Collect(maps.Keys(img.Files)))
		}
	}
}

// Bad input fails with exit 2 (usage) or 1 and names the flag.
func TestBadInputNamesTheFlag(t *testing.T) {
	static := staticBinary(t, runtime.GOARCH)
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	out := filepath.Join(t.TempDir(), "img.tar")
	ok := []string{"--tag", "v1", "--out", out, "--binary", "linux/" + runtime.GOARCH + "=" + static}
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"unknown image":    {append([]string{"--image", "nope"}, ok...), 2, "--image"},
		"no tag":           {[]string{"--image", "tether", "--out", out, "--binary", "linux/amd64=" + static}, 2, "--tag"},
		"no out":           {[]string{"--image", "tether", "--tag", "v1", "--binary", "linux/amd64=" + static}, 2, "--out"},
		"no binary":        {[]string{"--image", "tether", "--tag", "v1", "--out", out}, 2, "--binary"},
		"bad binary flag":  {[]string{"--image", "tether", "--binary", "linux-amd64"}, 2, "PLATFORM=PATH"},
		"bad platform":     {[]string{"--image", "tether", "--binary", "linux=x"}, 2, "os/arch"},
		"bad created":      {append([]string{"--image", "tether", "--created", "yesterday"}, ok...), 2, "--created"},
		"missing file":     {[]string{"--image", "tether", "--tag", "v1", "--out", out, "--binary", "linux/amd64=/nonexistent/tether"}, 1, "--binary linux/amd64=/nonexistent/tether"},
		"wrong arch":       {[]string{"--image", "tether", "--tag", "v1", "--out", out, "--binary", "linux/" + other + "=" + static}, 1, "ELF machine"},
		"not linux":        {[]string{"--image", "tether", "--tag", "v1", "--out", out, "--binary", "darwin/arm64=" + static}, 1, "linux only"},
		"dynamic binary":   {[]string{"--image", "tether", "--tag", "v1", "--out", out, "--binary", "linux/" + runtime.GOARCH + "=/bin/sh"}, 1, "CGO_ENABLED=0"},
		"extra argument":   {append([]string{"--image", "tether", "extra"}, ok...), 2, "extra"},
		"same platform x2": {append([]string{"--image", "tether-shim", "--binary", "linux/" + runtime.GOARCH + "=" + static}, ok...), 1, "twice"},
		"no tether-pool":   {append([]string{"--image", "tether"}, ok...), 1, "--binary tether-pool:linux/" + runtime.GOARCH + "=PATH is required"},
		"no tether-stage":  {append([]string{"--image", "tether", "--binary", "tether-pool:linux/" + runtime.GOARCH + "=" + static}, ok...), 1, "--binary tether-stage:linux/" + runtime.GOARCH + "=PATH is required"},
		"not carried":      {append([]string{"--image", "tether-shim", "--binary", "tether-stage:linux/" + runtime.GOARCH + "=" + static}, ok...), 1, "carries no tether-stage"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr.String(), tc.code, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a failed run left %s behind", out)
			}
		})
	}
}
