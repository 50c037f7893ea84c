package docker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/docker"
	"github.com/tether-ci/tether/internal/testing/dockertest"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// ociRegistry serves an OCI image layout directory read-only through the
// OCI distribution API's pull endpoints, on 127.0.0.1.
type ociRegistry struct {
	addr      string
	dir       string
	manifests atomic.Int64 // manifest requests served
}

func startOCIRegistry(t *testing.T, dir string) *ociRegistry {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &ociRegistry{addr: ln.Addr().String(), dir: dir}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *ociRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p := req.URL.Path
	if p == "/v2/" || p == "/v2" {
		w.WriteHeader(http.StatusOK)
		return
	}
	if i := strings.LastIndex(p, "/manifests/"); i >= 0 {
		ref := p[i+len("/manifests/"):]
		var index struct {
			Manifests []struct {
				MediaType   string            `json:"mediaType"`
				Digest      string            `json:"digest"`
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		b, err := os.ReadFile(filepath.Join(r.dir, "index.json"))
		if err == nil {
			err = json.Unmarshal(b, &index)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for _, m := range index.Manifests {
			if m.Digest == ref || m.Annotations["org.opencontainers.image.ref.name"] == ref {
				r.manifests.Add(1)
				w.Header().Set("Content-Type", m.MediaType)
				r.blob(w, req, m.Digest)
				return
			}
		}
		http.NotFound(w, req)
		return
	}
	if i := strings.LastIndex(p, "/blobs/"); i >= 0 {
		r.blob(w, req, p[i+len("/blobs/"):])
		return
	}
	http.NotFound(w, req)
}

func (r *ociRegistry) blob(w http.ResponseWriter, req *http.Request, digest string) {
	algo, hex, ok := strings.Cut(digest, ":")
	if !ok || strings.ContainsAny(hex, "/.") {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Docker-Content-Digest", digest)
	http.ServeFile(w, req, filepath.Join(r.dir, "blobs", algo, hex))
}

// StartJob pulls a job image the engine does not have from a registry on
// 127.0.0.1, logs the pull's progress, and runs the job in it.
func TestStartJobPullsAMissingImage(t *testing.T) {
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	layout := t.TempDir()
	reg := startOCIRegistry(t, layout)
	e, err := dockertest.StartWith(ctx, dockertest.Options{InsecureRegistries: []string{reg.addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	refs, err := e.LoadImages(ctx, "busybox")
	if err != nil {
		t.Fatal(err)
	}
	// Into the registry's layout only: the engine's store keeps refs[0]
	// under its own name, not under the registry's.
	if out, err := e.Podman(ctx, "push", refs[0], "oci:"+layout+":pulled"); err != nil {
		t.Fatalf("podman push to an OCI layout: %v\n%s", err, out)
	}
	image := reg.addr + "/tether/busybox:pulled"

	c, err := docker.NewClient(e.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var logs syncbuf.Buffer
	ct, err := c.StartJob(ctx, docker.Spec{
		Image:      image,
		ShimBinary: env.shim,
		Scripts:    []docker.Script{{Name: "s.sh", Data: []byte("echo from the pulled image\n")}},
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatalf("StartJob with an image only the registry has: %v\nlog:\n%s", err, logs.String())
	}
	defer func() { _ = ct.Remove(context.Background()) }()
	var out syncbuf.Buffer
	res, err := client.Run(ctx, ct, client.Job{Scripts: []string{docker.ScriptPath("s.sh")}}, client.Options{Output: &out, ExitShim: true})
	if err != nil || res.ExitCode != 0 || out.String() != "from the pulled image\n" {
		t.Fatalf("Run: %v, exit %d, output %q", err, res.ExitCode, out.String())
	}
	if reg.manifests.Load() == 0 {
		t.Fatal("the registry served no manifest: the image did not come from it")
	}
	for _, want := range []string{"pulling image", "pull progress", "image pulled"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logs.String())
		}
	}
}
