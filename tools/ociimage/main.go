// Command ociimage writes the project's images — tether-shim (the job-pod
// image) and tether (the CLI, for the `tether gc` CronJob, with the pools'
// controller tether-pool and GitLab's run_exec tether-stage beside it) — as
// multi-platform OCI image-layout archives, without a daemon or registry and
// reproducibly (see internal/ociimage). scripts/build-images.sh and
// `make release` run it:
//
//	go run ./tools/ociimage --image tether-shim --tag v1.2.3 --version v1.2.3 \
//	    --binary linux/amd64=dist/tether-shim-linux-amd64 \
//	    --binary linux/arm64=dist/tether-shim-linux-arm64 \
//	    --out dist/tether-shim-v1.2.3.oci.tar
//
// An image that carries other binaries beside its own (tether's tether-pool
// and tether-stage) takes each as --binary NAME:PLATFORM=PATH for each platform.
//
// It prints the image's reference and index digest. Push the archive with
// `skopeo copy --all oci-archive:FILE docker://REGISTRY/NAME:TAG`, or import
// it with `ctr images import --all-platforms FILE`.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tether-ci/tether/internal/ociimage"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// binaries collects the repeated --binary PLATFORM=PATH flags.
type binaries []binary

type binary struct {
	// name is the file's name in the image: "" for the image's own binary.
	name     string
	platform ociimage.Platform
	path     string
}

func (b *binaries) String() string { return "" }

func (b *binaries) Set(s string) error {
	p, path, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return fmt.Errorf("want [NAME:]PLATFORM=PATH, e.g. linux/arm64=dist/tether-shim-linux-arm64")
	}
	name, plat, named := strings.Cut(p, ":")
	if !named {
		name, plat = "", p
	}
	platform, err := ociimage.ParsePlatform(plat)
	if err != nil {
		return err
	}
	*b = append(*b, binary{name, platform, path})
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	image := fs.String("image", "", "image to write: "+strings.Join(recipeNames(), " or "))
	repo := fs.String("repository", "", "image repository (default: the project's published repository of --image)")
	tag := fs.String("tag", "", "image tag (required)")
	ver := fs.String("version", "", "version for the org.opencontainers.image.version label (default: --tag)")
	revision := fs.String("revision", "", "source revision for the org.opencontainers.image.revision label")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time in Unix seconds (default $SOURCE_DATE_EPOCH, else 0)")
	out := fs.String("out", "", "archive to write (required)")
	var bins binaries
	fs.Var(&bins, "binary", "PLATFORM=PATH: the static binary for one platform (repeat per platform); NAME:PLATFORM=PATH: a binary the image carries beside it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ociimage --image NAME --tag TAG --binary linux/amd64=PATH [--binary linux/arm64=PATH] --out FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ociimage: "+format+"\n", a...)
		return 2
	}
	r, ok := recipes[*image]
	switch {
	case fs.NArg() > 0:
		return usage("unexpected argument %q", fs.Arg(0))
	case !ok:
		return usage("--image %q: want %s", *image, strings.Join(recipeNames(), " or "))
	case *tag == "":
		return usage("--tag is required")
	case *out == "":
		return usage("--out is required")
	case len(bins) == 0:
		return usage("--binary is required (one per platform)")
	}
	when := time.Unix(0, 0)
	if *created != "" {
		s, err := strconv.ParseInt(*created, 10, 64)
		if err != nil {
			return usage("--created %q: want Unix seconds", *created)
		}
		when = time.Unix(s, 0)
	}
	if *repo == "" {
		*repo = r.repository
	}
	if *ver == "" {
		*ver = *tag
	}
	x, err := r.index(*repo+":"+*tag, *ver, *revision, when, bins)
	if err != nil {
		fmt.Fprintln(stderr, "ociimage:", err)
		return 1
	}
	d, err := writeFile(*out, x)
	if err != nil {
		fmt.Fprintln(stderr, "ociimage:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s@%s\n", x.Name, d.Digest)
	return 0
}

// writeFile writes the archive next to path and renames it into place, so a
// failed run never leaves a truncated archive behind.
func writeFile(path string, x ociimage.Index) (ociimage.Descriptor, error) {
	var buf bytes.Buffer
	d, err := ociimage.WriteArchive(&buf, x)
	if err != nil {
		return d, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return d, fmt.Errorf("--out %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return d, fmt.Errorf("--out %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return d, fmt.Errorf("--out %s: %w", path, err)
	}
	return d, nil
}
