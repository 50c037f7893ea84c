package release

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/ociimage"
)

// The image archives push as they are with an independent OCI
// implementation (crane, go-containerregistry) to a registry on loopback:
// the pushed tag resolves to the archive's index digest, with both
// platforms, and each platform's configuration is the one built.
func TestReleaseImagesPush(t *testing.T) {
	d := release(t)
	crane := strings.TrimSpace(run(t, filepath.Join(repoRoot, "scripts", "tools.sh"), "crane"))
	addr := serveRegistry(t, crane)
	for _, img := range []struct{ name, repo string }{
		{"tether-shim", contract.ShimImageRepository},
		{"tether", contract.CLIImageRepository},
	} {
		archive := filepath.Join(d, img.name+"-"+version+".oci.tar")
		f, err := os.Open(archive)
		if err != nil {
			t.Fatal(err)
		}
		a, err := ociimage.ReadArchive(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		top, _, err := a.Images(img.repo + ":" + version)
		if err != nil {
			t.Fatal(err)
		}
		layout := filepath.Join(t.TempDir(), "layout")
		untar(t, archive, layout)
		ref := addr + "/mirror/" + img.name + ":" + version
		run(t, crane, "push", layout, ref)
		if got := strings.TrimSpace(run(t, crane, "digest", ref)); got != top.Digest {
			t.Errorf("%s resolves to %s after the push, the archive's index is %s", ref, got, top.Digest)
		}
		var idx ociimage.IndexManifest
		if err := json.Unmarshal([]byte(run(t, crane, "manifest", ref)), &idx); err != nil {
			t.Fatal(err)
		}
		var platforms []string
		for _, m := range idx.Manifests {
			if m.Platform != nil {
				platforms = append(platforms, m.Platform.String())
			}
		}
		if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
			t.Errorf("%s lists platforms %v", ref, platforms)
		}
		var cfg ociimage.ImageConfig
		if err := json.Unmarshal([]byte(run(t, crane, "config", "--platform", "linux/arm64", ref)), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != "arm64" || cfg.Config.User != "65532:65532" || cfg.Config.Entrypoint[0] != "/"+img.name {
			t.Errorf("%s linux/arm64 config %+v", ref, cfg)
		}
	}
}

// serveRegistry runs crane's in-memory registry on a free loopback port
// until the test ends and returns its address.
func serveRegistry(t *testing.T, crane string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := exec.Command(crane, "registry", "serve", "--address", addr)
	var log strings.Builder
	srv.Stdout, srv.Stderr = &log, &log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("crane registry serve on %s did not come up: %v\n%s", addr, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// untar extracts an image archive's regular files and directories into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("archive entry %q escapes the directory", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
