package release

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// serveRegistry runs crane's in-memory registry on a loopback port it
// chooses itself until the test ends and returns its address. (A port
// found free and closed again by the test could be taken, as the source
// port of any connection, before crane listens on it.)
func serveRegistry(t *testing.T, crane string) string {
	t.Helper()
	srv := exec.Command(crane, "registry", "serve", "--address", "127.0.0.1:0")
	logs, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.Stdout = srv.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	// crane logs "serving on port N" once it listens; the rest of its
	// log is kept for a failure message.
	port := make(chan string, 1)
	var mu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			log.WriteString(line + "\n")
			mu.Unlock()
			if _, p, ok := strings.Cut(line, "serving on port "); ok {
				select {
				case port <- strings.TrimSpace(p):
				default:
				}
			}
		}
		close(port)
	}()
	select {
	case p, ok := <-port:
		if ok {
			return net.JoinHostPort("127.0.0.1", p)
		}
	case <-time.After(time.Minute):
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("crane registry serve did not say it serves:\n%s", log.String())
	return ""
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
