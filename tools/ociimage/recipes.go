package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/ociimage"
)

// source is the project's source repository (org.opencontainers.image.source).
const source = "https://github.com/tether-ci/tether"

// nonRoot is the user the images run as (the distroless "nonroot" uid).
const nonRoot = "65532:65532"

// recipe is one of the project's images: a single static binary at /NAME.
type recipe struct {
	repository string
	binary     string // file name inside the image: /binary
	// beside are the binaries the image carries beside its own, each at
	// /NAME (given as --binary NAME:PLATFORM=PATH for every platform).
	beside      []string
	description string
	cmd         []string
}

// recipes are the images ociimage writes, by --image name.
var recipes = map[string]recipe{
	"tether-shim": {
		repository: contract.ShimImageRepository, binary: "tether-shim", cmd: []string{"--version"},
		description: "tether-shim alone: every Tether job pod's init container copies it into the build container",
	},
	"tether": {
		repository: contract.CLIImageRepository, binary: "tether", beside: []string{"tether-pool", "tether-stage"}, cmd: []string{"--help"},
		description: "the tether CLI (runs `tether gc` in the cleaner's CronJob), with the pools' controller tether-pool and GitLab's run_exec tether-stage beside it",
	},
}

func recipeNames() []string { return slices.Sorted(maps.Keys(recipes)) }

// index builds the image named ref from one static binary per platform.
func (r recipe) index(ref, version, revision string, created time.Time, bins []binary) (ociimage.Index, error) {
	labels := map[string]string{
		"org.opencontainers.image.title":       r.binary,
		"org.opencontainers.image.description": r.description,
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.url":         source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.vendor":      "Tether",
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
	}
	if revision != "" {
		labels["org.opencontainers.image.revision"] = revision
	}
	x := ociimage.Index{Name: ref, Created: created, Annotations: labels}
	own, beside, err := r.split(bins)
	if err != nil {
		return x, err
	}
	for _, b := range own {
		if b.platform.OS != "linux" {
			return x, fmt.Errorf("--binary %s: images are for linux only", b.platform)
		}
		data, err := os.ReadFile(b.path)
		if err != nil {
			return x, fmt.Errorf("--binary %s=%s: %w", b.platform, b.path, err)
		}
		if err := ociimage.CheckStaticELF(data, b.platform.Architecture); err != nil {
			return x, fmt.Errorf("--binary %s=%s: %w", b.platform, b.path, err)
		}
		files := []ociimage.File{{Path: "/" + r.binary, Mode: 0o755, Data: data}}
		for _, name := range r.beside {
			f, err := besideFile(name, b.platform, beside)
			if err != nil {
				return x, err
			}
			files = append(files, f)
		}
		x.Images = append(x.Images, ociimage.Image{
			Platform: b.platform,
			Files:    files,
			Config: ociimage.Config{
				User:       nonRoot,
				Entrypoint: []string{"/" + r.binary},
				Cmd:        r.cmd,
				Labels:     labels,
			},
		})
	}
	return x, nil
}

// split separates the image's own binaries from those it carries beside
// them (by name and platform), refusing a name the image does not carry.
func (r recipe) split(bins []binary) (own []binary, beside map[string]binary, err error) {
	beside = map[string]binary{}
	for _, b := range bins {
		switch {
		case b.name == "" || b.name == r.binary:
			own = append(own, b)
		case slices.Contains(r.beside, b.name):
			beside[b.name+" "+b.platform.String()] = b
		default:
			return nil, nil, fmt.Errorf("--binary %s:%s=%s: the %s image carries no %s", b.name, b.platform, b.path, r.binary, b.name)
		}
	}
	return own, beside, nil
}

// besideFile is the binary name for platform p, from --binary NAME:P=PATH.
func besideFile(name string, p ociimage.Platform, beside map[string]binary) (ociimage.File, error) {
	b, ok := beside[name+" "+p.String()]
	if !ok {
		return ociimage.File{}, fmt.Errorf("--binary %s:%s=PATH is required: the image carries %s beside its own binary", name, p, name)
	}
	data, err := os.ReadFile(b.path)
	if err != nil {
		return ociimage.File{}, fmt.Errorf("--binary %s:%s=%s: %w", name, p, b.path, err)
	}
	if err := ociimage.CheckStaticELF(data, p.Architecture); err != nil {
		return ociimage.File{}, fmt.Errorf("--binary %s:%s=%s: %w", name, p, b.path, err)
	}
	return ociimage.File{Path: "/" + name, Mode: 0o755, Data: data}, nil
}
