package ociimage_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/internal/ociimage"
)

func sample(data string, created time.Time) ociimage.Index {
	img := func(arch string) ociimage.Image {
		return ociimage.Image{
			Platform: ociimage.Platform{OS: "linux", Architecture: arch},
			Files: []ociimage.File{
				{Path: "/usr/bin/tool", Mode: 0o755, UID: 0, GID: 0, Data: []byte(data + "-" + arch)},
				{Path: "/app", Mode: 0o755, UID: 65532, GID: 65532, Data: []byte(data)},
			},
			Config: ociimage.Config{User: "65532:65532", Entrypoint: []string{"/app"},
				Labels: map[string]string{"org.opencontainers.image.title": "app", "b": "2", "a": "1"}},
		}
	}
	return ociimage.Index{
		Name: "example.org/team/app:v1.2.3", Created: created,
		Annotations: map[string]string{"org.opencontainers.image.version": "v1.2.3"},
		Images:      []ociimage.Image{img("amd64"), img("arm64")},
	}
}

func write(t *testing.T, x ociimage.Index) ([]byte, ociimage.Descriptor) {
	t.Helper()
	var buf bytes.Buffer
	d, err := ociimage.WriteArchive(&buf, x)
	if err != nil {
		t.Fatalf("WriteArchive: %v", err)
	}
	return buf.Bytes(), d
}

// Same input, same bytes: the archive (and so the index digest) depends only
// on the files, configuration and creation time, not on when or in which
// order it was made; any change of those changes the digest.
func TestArchiveIsReproducible(t *testing.T) {
	at := time.Unix(1700000000, 0)
	a, da := write(t, sample("x", at))
	shuffled := sample("x", at)
	for i := range shuffled.Images {
		f := shuffled.Images[i].Files
		f[0], f[1] = f[1], f[0]
	}
	b, db := write(t, shuffled)
	if !bytes.Equal(a, b) || da.Digest != db.Digest {
		t.Fatalf("two writes of the same image differ: %s vs %s", da.Digest, db.Digest)
	}
	for name, x := range map[string]ociimage.Index{
		"content": sample("y", at),
		"time":    sample("x", at.Add(time.Second)),
	} {
		_, d := write(t, x)
		if d.Digest == da.Digest {
			t.Errorf("changing the %s kept the digest %s", name, d.Digest)
		}
	}
}

// What is written reads back: index.json names the image for containerd and
// OCI tools, the index lists both platforms, each configuration and layer
// matches what went in (owners, modes, content, user, labels).
func TestArchiveRoundTrip(t *testing.T) {
	x := sample("x", time.Unix(1700000000, 0))
	b, d := write(t, x)
	a, err := ociimage.ReadArchive(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(a.Index.Manifests); n != 1 {
		t.Fatalf("index.json has %d entries, want 1", n)
	}
	e := a.Index.Manifests[0]
	if e.Annotations[ociimage.AnnotationContainerdName] != x.Name || e.Annotations[ociimage.AnnotationRefName] != "v1.2.3" {
		t.Errorf("index.json annotations %v", e.Annotations)
	}
	for _, ref := range []string{x.Name, "v1.2.3", ""} {
		top, imgs, err := a.Images(ref)
		if err != nil {
			t.Fatalf("Images(%q): %v", ref, err)
		}
		if top.Digest != d.Digest {
			t.Errorf("Images(%q) resolved %s, WriteArchive returned %s", ref, top.Digest, d.Digest)
		}
		if len(imgs) != 2 || imgs[0].Platform.String() != "linux/amd64" || imgs[1].Platform.String() != "linux/arm64" {
			t.Fatalf("platforms %+v", imgs)
		}
		for _, img := range imgs {
			arch := img.Platform.Architecture
			if img.Config.Architecture != arch || img.Config.OS != "linux" || img.Config.Config.User != "65532:65532" ||
				img.Config.Config.Labels["org.opencontainers.image.title"] != "app" || img.Config.Created != "2023-11-14T22:13:20Z" {
				t.Errorf("%s config %+v", arch, img.Config)
			}
			app, tool := img.Files["/app"], img.Files["/usr/bin/tool"]
			if string(app.Data) != "x" || app.UID != 65532 || app.GID != 65532 || app.Mode != 0o755 {
				t.Errorf("%s /app %+v", arch, app)
			}
			if string(tool.Data) != "x-"+arch || tool.UID != 0 || tool.Mode != 0o755 {
				t.Errorf("%s /usr/bin/tool %+v", arch, tool)
			}
			if len(img.Files) != 2 {
				t.Errorf("%s has %d files, want 2", arch, len(img.Files))
			}
		}
	}
	if _, _, err := a.Images("example.org/team/app:v9"); err == nil {
		t.Error("an unknown name resolved")
	}
}

// A corrupted blob is caught on read.
func TestReadArchiveChecksDigests(t *testing.T) {
	b, _ := write(t, sample("x", time.Unix(0, 0)))
	i := bytes.Index(b, []byte(`"schemaVersion":2`))
	if i < 0 {
		t.Fatal("no JSON blob found in the archive")
	}
	bad := bytes.Clone(b)
	copy(bad[i:], `"schemaVersion":3`)
	if _, err := ociimage.ReadArchive(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("corrupted archive: err %v, want a digest mismatch", err)
	}
}

func TestWriteArchiveRejectsBadInput(t *testing.T) {
	ok := sample("x", time.Unix(0, 0))
	for name, tc := range map[string]struct {
		edit func(*ociimage.Index)
		want string
	}{
		"no tag":         {func(x *ociimage.Index) { x.Name = "example.org:5000/app" }, "with a tag"},
		"no platforms":   {func(x *ociimage.Index) { x.Images = nil }, "no platforms"},
		"same platform":  {func(x *ociimage.Index) { x.Images[1].Platform = x.Images[0].Platform }, "platform linux/amd64 twice"},
		"relative path":  {func(x *ociimage.Index) { x.Images[0].Files[0].Path = "app" }, `file path "app"`},
		"unclean path":   {func(x *ociimage.Index) { x.Images[0].Files[0].Path = "/a/../b" }, "clean absolute path"},
		"duplicate file": {func(x *ociimage.Index) { x.Images[0].Files[1].Path = "/usr/bin/tool" }, "twice"},
	} {
		t.Run(name, func(t *testing.T) {
			x := sample("x", time.Unix(0, 0))
			x.Images = append([]ociimage.Image(nil), ok.Images...)
			for i := range x.Images {
				x.Images[i].Files = append([]ociimage.File(nil), ok.Images[i].Files...)
			}
			tc.edit(&x)
			var buf bytes.Buffer
			if _, err := ociimage.WriteArchive(&buf, x); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestParsePlatform(t *testing.T) {
	for in, want := range map[string]string{"linux/amd64": "linux/amd64", "linux/arm/v7": "linux/arm/v7"} {
		p, err := ociimage.ParsePlatform(in)
		if err != nil || p.String() != want {
			t.Errorf("ParsePlatform(%q) = %v, %v", in, p, err)
		}
	}
	for _, in := range []string{"linux", "/amd64", "linux/", "a/b/c/d"} {
		if _, err := ociimage.ParsePlatform(in); err == nil {
			t.Errorf("ParsePlatform(%q) accepted", in)
		}
	}
}
