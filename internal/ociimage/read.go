package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// Archive is an OCI image-layout tarball read into memory, with every blob
// checked against its digest.
type Archive struct {
	// Index is the content of index.json.
	Index IndexManifest
	blobs blobs
}

// PlatformImage is one platform's image of an archive's index.
type PlatformImage struct {
	Platform Platform
	// Manifest is the descriptor of the platform's manifest in the index.
	Manifest Descriptor
	Config   ImageConfig
	// Layers are the manifest's layer descriptors (Size is the compressed
	// size a registry pull transfers).
	Layers []Descriptor
	// Files are the regular files of the layers by absolute path.
	Files map[string]File
}

// ReadArchive reads an archive WriteArchive (or any tool writing OCI image
// layouts as tar) wrote.
func ReadArchive(r io.Reader) (*Archive, error) {
	a := &Archive{blobs: blobs{}}
	tr := tar.NewReader(r)
	var index, layout []byte
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read image archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read image archive entry %s: %w", hdr.Name, err)
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		switch {
		case name == "index.json":
			index = b
		case name == "oci-layout":
			layout = b
		case strings.HasPrefix(name, "blobs/sha256/"):
			d := "sha256:" + strings.TrimPrefix(name, "blobs/sha256/")
			if got := digestOf(b); got != d {
				return nil, fmt.Errorf("image archive blob %s has digest %s", name, got)
			}
			a.blobs[d] = b
		}
	}
	if layout == nil || index == nil {
		return nil, errors.New("not an OCI image layout archive: oci-layout or index.json is missing")
	}
	if err := json.Unmarshal(index, &a.Index); err != nil {
		return nil, fmt.Errorf("image archive index.json: %w", err)
	}
	return a, nil
}

// Blob returns the blob d points at, checking its size.
func (a *Archive) Blob(d Descriptor) ([]byte, error) {
	b, ok := a.blobs[d.Digest]
	if !ok {
		return nil, fmt.Errorf("image archive lacks blob %s (%s)", d.Digest, d.MediaType)
	}
	if int64(len(b)) != d.Size {
		return nil, fmt.Errorf("image archive blob %s: %d bytes, descriptor says %d", d.Digest, len(b), d.Size)
	}
	return b, nil
}

// decode reads the JSON blob d points at into v.
func (a *Archive) decode(d Descriptor, v any) error {
	b, err := a.Blob(d)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s %s: %w", d.MediaType, d.Digest, err)
	}
	return nil
}

// Images resolves the image index that index.json names ref (by
// io.containerd.image.name or org.opencontainers.image.ref.name; "" for the
// only entry) into its platforms' images, checking that each layer's
// uncompressed digest is the configuration's diff ID.
func (a *Archive) Images(ref string) (Descriptor, []PlatformImage, error) {
	var top *Descriptor
	for i, d := range a.Index.Manifests {
		if ref == "" && len(a.Index.Manifests) == 1 || ref != "" && (d.Annotations[AnnotationContainerdName] == ref || d.Annotations[AnnotationRefName] == ref) {
			top = &a.Index.Manifests[i]
		}
	}
	if top == nil {
		return Descriptor{}, nil, fmt.Errorf("image archive has no image named %q", ref)
	}
	if top.MediaType != MediaTypeIndex {
		return Descriptor{}, nil, fmt.Errorf("image %q is a %s, not an image index", ref, top.MediaType)
	}
	var idx IndexManifest
	if err := a.decode(*top, &idx); err != nil {
		return Descriptor{}, nil, err
	}
	var out []PlatformImage
	for _, md := range idx.Manifests {
		if md.Platform == nil {
			return Descriptor{}, nil, fmt.Errorf("index entry %s has no platform", md.Digest)
		}
		var m Manifest
		if err := a.decode(md, &m); err != nil {
			return Descriptor{}, nil, err
		}
		pi := PlatformImage{Platform: *md.Platform, Manifest: md, Layers: m.Layers, Files: map[string]File{}}
		if err := a.decode(m.Config, &pi.Config); err != nil {
			return Descriptor{}, nil, err
		}
		if len(pi.Config.RootFS.DiffIDs) != len(m.Layers) {
			return Descriptor{}, nil, fmt.Errorf("manifest %s: %d layers, %d diff IDs", md.Digest, len(m.Layers), len(pi.Config.RootFS.DiffIDs))
		}
		for i, l := range m.Layers {
			if err := a.readLayer(l, pi.Config.RootFS.DiffIDs[i], pi.Files); err != nil {
				return Descriptor{}, nil, err
			}
		}
		out = append(out, pi)
	}
	return *top, out, nil
}

// readLayer adds the regular files of layer l to files.
func (a *Archive) readLayer(l Descriptor, diffID string, files map[string]File) error {
	b, err := a.Blob(l)
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("layer %s: %w", l.Digest, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("layer %s: %w", l.Digest, err)
	}
	if got := digestOf(raw); got != diffID {
		return fmt.Errorf("layer %s uncompresses to %s, the configuration says %s", l.Digest, got, diffID)
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("layer %s: %w", l.Digest, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return fmt.Errorf("layer %s file %s: %w", l.Digest, hdr.Name, err)
		}
		p := "/" + strings.TrimPrefix(hdr.Name, "./")
		files[p] = File{Path: p, Mode: fs.FileMode(hdr.Mode).Perm(), UID: hdr.Uid, GID: hdr.Gid, Data: data}
	}
}

// Manifest returns the image manifest d points at.
func (a *Archive) Manifest(d Descriptor) (Manifest, error) {
	var m Manifest
	err := a.decode(d, &m)
	return m, err
}
