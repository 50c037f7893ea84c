// Package ociimage writes container images as OCI image-layout archives
// ("oci-archive" tarballs) without a daemon or registry, reproducibly: the
// same files, configuration and creation time always give the same bytes and
// therefore the same digests.
//
// An archive holds one multi-platform image index (one image manifest per
// platform, each with a single gzip layer) named in index.json with both the
// containerd annotation (io.containerd.image.name, which `ctr images import`
// reads) and the OCI one (org.opencontainers.image.ref.name, the tag, which
// skopeo's and podman's oci-archive transports read).
package ociimage

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
)

// Media types and annotations of the OCI image specification (and the one
// containerd adds) that the archives use.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"

	// AnnotationRefName is the OCI annotation naming an index.json entry
	// (by the OCI convention, the tag).
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationContainerdName is the full image reference containerd's
	// import gives the entry.
	AnnotationContainerdName = "io.containerd.image.name"
	// AnnotationCreated is the OCI annotation for the creation time.
	AnnotationCreated = "org.opencontainers.image.created"
)

// File is one regular file of an image's layer.
type File struct {
	// Path is the absolute path inside the image, e.g. "/tether-shim".
	Path string
	// Mode holds the permission bits (0o755 for a program).
	Mode fs.FileMode
	// UID and GID own the file (directories the layer adds for its
	// parents are owned by root).
	UID, GID int
	// Data is the file's content.
	Data []byte
}

// Config is the part of the OCI image configuration a container runtime
// uses to start the image.
type Config struct {
	// User is "uid[:gid]" or a name, as in a Dockerfile's USER.
	User       string            `json:"User,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// Platform names an operating system and CPU architecture, as Go's GOOS and
// GOARCH spell them (which is also how OCI spells them).
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

// String returns "os/arch[/variant]".
func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ParsePlatform parses "os/arch[/variant]".
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return Platform{}, fmt.Errorf("platform %q: want os/arch or os/arch/variant, e.g. linux/arm64", s)
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// Image is the content of one platform's image.
type Image struct {
	Platform Platform
	// Files make up the image's only layer.
	Files  []File
	Config Config
}

// Index is a multi-platform image: what WriteArchive writes.
type Index struct {
	// Name is the full reference the archive names the index with, e.g.
	// "ghcr.io/tether-ci/tether-shim:v1.2.3". Its tag (after the last colon
	// of the last path element) is the OCI ref.name.
	Name string
	// Created is the creation time recorded in every configuration and
	// the layer's file times; fix it (e.g. to SOURCE_DATE_EPOCH) for
	// reproducible archives.
	Created time.Time
	// Annotations go on the index (org.opencontainers.image.*).
	Annotations map[string]string
	// Images has one entry per platform, in the order the index lists them.
	Images []Image
}

// Tag returns the tag of a reference "host/path:tag" ("" without one).
func Tag(ref string) string {
	last := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 {
		return last[i+1:]
	}
	return ""
}

// validate reports the first problem of x.
func (x Index) validate() error {
	if x.Name == "" || Tag(x.Name) == "" {
		return fmt.Errorf("image name %q: want a full reference with a tag, e.g. example.org/app:v1", x.Name)
	}
	if len(x.Images) == 0 {
		return fmt.Errorf("image %s: no platforms", x.Name)
	}
	seen := map[string]bool{}
	for _, img := range x.Images {
		p := img.Platform.String()
		if seen[p] {
			return fmt.Errorf("image %s: platform %s twice", x.Name, p)
		}
		seen[p] = true
		if len(img.Files) == 0 {
			return fmt.Errorf("image %s (%s): no files", x.Name, p)
		}
		files := map[string]bool{}
		for _, f := range img.Files {
			if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
				return fmt.Errorf("image %s (%s): file path %q: want a clean absolute path", x.Name, p, f.Path)
			}
			if files[f.Path] {
				return fmt.Errorf("image %s (%s): file %s twice", x.Name, p, f.Path)
			}
			files[f.Path] = true
		}
	}
	return nil
}
