package actions

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Image names split with Docker's rules.
func TestParseImageRef(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		image string
		want  imageRef
	}{
		{"busybox", imageRef{"index.docker.io", "library/busybox", "latest"}},
		{"busybox:1.36", imageRef{"index.docker.io", "library/busybox", "1.36"}},
		{"docker.io/library/busybox", imageRef{"index.docker.io", "library/busybox", "latest"}},
		{"registry-1.docker.io/org/tool:v2", imageRef{"index.docker.io", "org/tool", "v2"}},
		{"org/tool", imageRef{"index.docker.io", "org/tool", "latest"}},
		{"ghcr.io/o/a/b:v1", imageRef{"ghcr.io", "o/a/b", "v1"}},
		{"localhost:5000/a:t", imageRef{"localhost:5000", "a", "t"}},
		{"localhost/a", imageRef{"localhost", "a", "latest"}},
		{"127.0.0.1:5000/a@" + d, imageRef{"127.0.0.1:5000", "a", d}},
		{"ghcr.io/o/a:v1@" + d, imageRef{"ghcr.io", "o/a", d}},
		{"ghcr.io/my_org/a__b.c-d--e:V1.0_x", imageRef{"ghcr.io", "my_org/a__b.c-d--e", "V1.0_x"}},
	} {
		got, err := parseImageRef(tc.image)
		if err != nil || got != tc.want {
			t.Errorf("parseImageRef(%q) = %+v, %v; want %+v", tc.image, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "Upper/case", "a//b", "ghcr.io/o/a:bad tag", "a@sha256:12", "a:", "a___b", "_a", "a.", "a:.t", "a@sha256:" + strings.Repeat("G", 64)} {
		if r, err := parseImageRef(bad); err == nil {
			t.Errorf("parseImageRef(%q) = %+v, want an error", bad, r)
		}
	}
	for registry, want := range map[string]string{"localhost": "http", "localhost:5000": "http", "127.0.0.1:5000": "http",
		"[::1]:5000": "http", "10.1.2.3": "http", "192.168.1.2:80": "http", "ghcr.io": "https", "8.8.8.8": "https", "index.docker.io": "https"} {
		if got := (imageRef{registry: registry}).scheme(); got != want {
			t.Errorf("scheme of %s: %s, want %s", registry, got, want)
		}
	}
}

// imageWith returns a random image whose config has entrypoint.
func imageWith(t *testing.T, entrypoint ...string) v1.Image {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Entrypoint = entrypoint
	cf.Config.Cmd = []string{"--cmd"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// authFront puts authentication in front of a registry, as a registry
// with Docker's token authentication (bearer) or basic authentication
// does: a request without it gets 401 and the challenge.
type authFront struct {
	next       http.Handler
	user, pass string
	bearer     bool
	tokens     atomic.Int32 // tokens issued
}

func (a *authFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(a.user+":"+a.pass))
	if r.URL.Path == "/token" {
		scope := r.URL.Query().Get("scope")
		if r.Header.Get("Authorization") != basic || r.URL.Query().Get("service") != "test-registry" ||
			!strings.HasPrefix(scope, "repository:org/action:") || !strings.Contains(scope, "pull") {
			http.Error(w, `{"errors":[{"code":"DENIED","message":"bad credentials or scope"}]}`, http.StatusUnauthorized)
			return
		}
		a.tokens.Add(1)
		fmt.Fprint(w, `{"access_token":"tok-123"}`)
		return
	}
	want, challenge := basic, `Basic realm="test"`
	if a.bearer {
		want = "Bearer tok-123"
		challenge = `Bearer realm="http://` + r.Host + `/token",service="test-registry",scope="repository:org/action:pull"`
	}
	if r.Header.Get("Authorization") != want {
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
		return
	}
	a.next.ServeHTTP(w, r)
}

// An image index gives the linux image of the hook's architecture; basic
// and bearer-token registries are read with the pull secret's
// credentials, and refuse wrong ones.
func TestReadImageCommandIndexAndAuth(t *testing.T) {
	for _, bearer := range []bool{false, true} {
		front := &authFront{next: registry.New(registry.Logger(log.New(io.Discard, "", 0))), user: "u", pass: "p w", bearer: bearer}
		srv := httptest.NewServer(front)
		host := strings.TrimPrefix(srv.URL, "http://")
		other := "arm"
		if runtime.GOARCH == "arm" {
			other = "s390x"
		}
		idx := mutate.AppendManifests(empty.Index,
			mutate.IndexAddendum{Add: imageWith(t, "/other-arch"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: other}}},
			mutate.IndexAddendum{Add: imageWith(t, "/windows"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "windows", Architecture: runtime.GOARCH}}},
			mutate.IndexAddendum{Add: imageWith(t, "/mine", "x"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}},
		)
		ref, err := name.ParseReference(host + "/org/action:multi")
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.WriteIndex(ref, idx, remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: front.user, Password: front.pass}))); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		secret := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, "http://"+host, base64.StdEncoding.EncodeToString([]byte("u:p w")))
		got, err := readImageCommand(ctx, host+"/org/action:multi", []byte(secret))
		if want := (imageCommand{Entrypoint: []string{"/mine", "x"}, Cmd: []string{"--cmd"}}); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("bearer %v: got %+v, %v; want %+v", bearer, got, err, want)
		}
		if bearer && front.tokens.Load() == 0 {
			t.Error("no token was asked for")
		}
		wrong := fmt.Sprintf(`{"auths":{%q:{"username":"u","password":"nope"}}}`, host)
		if _, err := readImageCommand(ctx, host+"/org/action:multi", []byte(wrong)); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("bearer %v: wrong credentials: %v", bearer, err)
		}
		if _, err := readImageCommand(ctx, host+"/org/action:multi", nil); err == nil {
			t.Errorf("bearer %v: read without credentials", bearer)
		}
		cancel()
		srv.Close()
	}
}
