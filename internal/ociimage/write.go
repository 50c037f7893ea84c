package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// createdBy is the history entry of every layer.
const createdBy = "tether ociimage: one layer of static files"

// blobs holds the content of an archive by digest.
type blobs map[string][]byte

// add stores b and returns its descriptor.
func (bs blobs) add(mediaType string, b []byte) Descriptor {
	d := digestOf(b)
	bs[d] = b
	return Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}
}

// addJSON stores v as JSON.
func (bs blobs) addJSON(mediaType string, v any) (Descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Descriptor{}, fmt.Errorf("encode %s: %w", mediaType, err)
	}
	return bs.add(mediaType, b), nil
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// WriteArchive writes x to w as an OCI image-layout tarball and returns the
// descriptor of its image index (whose digest is the image's digest in a
// registry after a push).
func WriteArchive(w io.Writer, x Index) (Descriptor, error) {
	if err := x.validate(); err != nil {
		return Descriptor{}, err
	}
	created := x.Created.UTC().Truncate(time.Second)
	bs := blobs{}
	idx := IndexManifest{SchemaVersion: 2, MediaType: MediaTypeIndex, Annotations: maps.Clone(x.Annotations)}
	for _, img := range x.Images {
		d, err := bs.addImage(img, created)
		if err != nil {
			return Descriptor{}, fmt.Errorf("image %s (%s): %w", x.Name, img.Platform, err)
		}
		idx.Manifests = append(idx.Manifests, d)
	}
	top, err := bs.addJSON(MediaTypeIndex, idx)
	if err != nil {
		return Descriptor{}, err
	}
	named := top
	named.Annotations = map[string]string{
		AnnotationContainerdName: x.Name,
		AnnotationRefName:        Tag(x.Name),
		AnnotationCreated:        created.Format(time.RFC3339),
	}
	layout, err := json.Marshal(IndexManifest{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{named}})
	if err != nil {
		return Descriptor{}, fmt.Errorf("encode index.json: %w", err)
	}
	if err := writeLayout(w, bs, layout, created); err != nil {
		return Descriptor{}, fmt.Errorf("write archive of %s: %w", x.Name, err)
	}
	return top, nil
}

// addImage stores one platform's layer, configuration and manifest and
// returns the manifest's descriptor.
func (bs blobs) addImage(img Image, created time.Time) (Descriptor, error) {
	layer, err := layerTar(img.Files, created)
	if err != nil {
		return Descriptor{}, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return Descriptor{}, err
	}
	if _, err := zw.Write(layer); err != nil {
		return Descriptor{}, fmt.Errorf("compress layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return Descriptor{}, fmt.Errorf("compress layer: %w", err)
	}
	layerDesc := bs.add(MediaTypeLayer, gz.Bytes())
	ts := created.Format(time.RFC3339)
	cfg := ImageConfig{
		Created: ts, Architecture: img.Platform.Architecture, OS: img.Platform.OS, Variant: img.Platform.Variant,
		Config:  img.Config,
		RootFS:  RootFS{Type: "layers", DiffIDs: []string{digestOf(layer)}},
		History: []History{{Created: ts, CreatedBy: createdBy}},
	}
	cfgDesc, err := bs.addJSON(MediaTypeConfig, cfg)
	if err != nil {
		return Descriptor{}, err
	}
	m := Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest, Config: cfgDesc, Layers: []Descriptor{layerDesc}}
	d, err := bs.addJSON(MediaTypeManifest, m)
	if err != nil {
		return Descriptor{}, err
	}
	p := img.Platform
	d.Platform = &p
	return d, nil
}

// layerTar returns the uncompressed layer: the files sorted by path, each
// preceded by the directories above it, with fixed times and owners.
func layerTar(files []File, created time.Time) ([]byte, error) {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range sorted {
		var parents []string
		for d := path.Dir(f.Path); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
		}
		slices.Reverse(parents)
		for _, d := range parents {
			dirs[d] = true
			hdr := &tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: created, Format: tar.FormatPAX}
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, fmt.Errorf("layer directory %s: %w", d, err)
			}
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: f.Path[1:], Mode: int64(f.Mode.Perm()), Size: int64(len(f.Data)),
			Uid: f.UID, Gid: f.GID, ModTime: created, Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer file %s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("layer file %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("finish layer: %w", err)
	}
	return buf.Bytes(), nil
}

// writeLayout writes the image layout as a tar stream: oci-layout,
// index.json and blobs/sha256/*, in name order, with fixed times and owners.
func writeLayout(w io.Writer, bs blobs, index []byte, created time.Time) error {
	tw := tar.NewWriter(w)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: created, Format: tar.FormatPAX})
	}
	file := func(name string, b []byte) error {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: created, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := dir("blobs/"); err != nil {
		return err
	}
	if err := dir("blobs/sha256/"); err != nil {
		return err
	}
	for _, d := range slices.Sorted(maps.Keys(bs)) {
		if err := file("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), bs[d]); err != nil {
			return err
		}
	}
	if err := file("index.json", index); err != nil {
		return err
	}
	if err := file("oci-layout", []byte(layoutFile)); err != nil {
		return err
	}
	return tw.Close()
}
