package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/ociimage"
)

// source is the project's source repository (org.opencontainers.image.source).
const source = "https://github.com/tether-ci/tether"

// nonRoot is the user the images run as (the distroless "nonroot" uid).
const nonRoot = "65532:65532"

// recipe is one of the project's images: a static binary at /NAME, the
// entrypoint, and the static binaries it runs beside it.
type recipe struct {
	repository  string
	binary      string // file name inside the image: /binary
	description string
	cmd         []string
	// companions are binaries the entrypoint runs from beside itself, each
	// at /NAME; each is read from the entrypoint's --binary path with its
	// name's leading binary replaced (companionPath).
	companions []string
}

// recipes are the images ociimage writes, by --image name.
var recipes = map[string]recipe{
	"tether-shim": {
		repository: contract.ShimImageRepository, binary: "tether-shim", cmd: []string{"--version"},
		description: "tether-shim alone: every Tether job pod's init container copies it into the build container",
	},
	"tether": {
		repository: contract.CLIImageRepository, binary: "tether", cmd: []string{"--help"},
		description: "the tether CLI (runs `tether gc` in the cleaner's CronJob) and tether-pool (`tether pool serve` in the pools' controller's Deployment)",
		companions:  []string{"tether-pool"},
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
	for _, b := range bins {
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
		for _, c := range r.companions {
			path, err := companionPath(b.path, r.binary, c)
			if err != nil {
				return x, fmt.Errorf("--binary %s=%s: %w", b.platform, b.path, err)
			}
			cdata, err := os.ReadFile(path)
			if err != nil {
				return x, fmt.Errorf("--binary %s=%s: its companion %s: %w", b.platform, b.path, c, err)
			}
			if err := ociimage.CheckStaticELF(cdata, b.platform.Architecture); err != nil {
				return x, fmt.Errorf("--binary %s=%s: its companion %s: %w", b.platform, b.path, path, err)
			}
			files = append(files, ociimage.File{Path: "/" + c, Mode: 0o755, Data: cdata})
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

// companionPath is where the companion binary of an image's binary is
// found: beside it, named as it is with its leading name replaced
// (bin/linux-amd64/tether → bin/linux-amd64/tether-pool,
// dist/tether-v1.2.3-linux-amd64 → dist/tether-pool-v1.2.3-linux-amd64).
func companionPath(path, binary, companion string) (string, error) {
	dir, base := filepath.Split(path)
	rest, ok := strings.CutPrefix(base, binary)
	if !ok {
		return "", fmt.Errorf("the file's name must start with %q, so that %s is found beside it (as %s…)", binary, companion, companion)
	}
	return filepath.Join(dir, companion+rest), nil
}
