package ociimage

// Descriptor points at a blob: an OCI content descriptor.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *Platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// IndexManifest is an OCI image index (also the shape of index.json).
type IndexManifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []Descriptor      `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Manifest is an OCI image manifest: one platform's configuration and layers.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// ImageConfig is an OCI image configuration.
type ImageConfig struct {
	Created      string    `json:"created"`
	Architecture string    `json:"architecture"`
	OS           string    `json:"os"`
	Variant      string    `json:"variant,omitempty"`
	Config       Config    `json:"config"`
	RootFS       RootFS    `json:"rootfs"`
	History      []History `json:"history,omitempty"`
}

// RootFS lists the digests of the uncompressed layers.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// History describes how a layer was made.
type History struct {
	Created   string `json:"created,omitempty"`
	CreatedBy string `json:"created_by,omitempty"`
}

// layoutFile is the content of the archive's oci-layout file.
const layoutFile = `{"imageLayoutVersion":"1.0.0"}`
