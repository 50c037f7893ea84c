//go:build e2e

package e2e

import (
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// serveImage serves the test image bin/images/NAME.tar from a registry on
// a loopback port (go-containerregistry's, in memory, plain HTTP; the
// node's container runtime pulls from loopback over HTTP) until the test
// ends, and returns its name there: 127.0.0.1:PORT/tether/NAME:TAG.
func serveImage(t *testing.T, name_ string) string {
	t.Helper()
	img, err := tarball.ImageFromPath(filepath.Join(repoRoot(t), "bin", "images", name_+".tar"), nil)
	if err != nil {
		t.Fatalf("read the image %s: %v", name_, err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/tether/" + name_ + ":" + imageTag())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref.String()
}
