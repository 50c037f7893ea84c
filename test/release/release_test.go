// Package release checks what `make release` (scripts/release.sh) produces,
// by running it into a temporary directory: the binaries for every platform
// report the version, the shim and CLI images are linux/amd64 + linux/arm64
// indexes of static binaries (the shim image within its size budget), the
// archives are reproducible, the chart and the plain manifests default to
// the release's image, a second release is identical, and SHA256SUMS covers
// it all.
package release

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/macho"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/tether-ci/tether/internal/contract"
	"github.com/tether-ci/tether/internal/ociimage"
)

// version is the release the test makes; sourceDateEpoch fixes its time.
const (
	version         = "v9.8.7-test.1"
	sourceDateEpoch = "1700000000"
	// shimImageBudget is the most the shim image may weigh per platform
	// (what a node pulls: manifest, configuration and compressed layer).
	shimImageBudget = 3 << 20
)

// repoRoot is the repository's root, two levels above this package.
const repoRoot = "../.."

var dist struct {
	sync.Once
	dir string
	err error
}

// release runs scripts/release.sh once for the package's tests and returns
// its output directory.
func release(t *testing.T) string {
	t.Helper()
	dist.Do(func() {
		dir, err := os.MkdirTemp("", "tether-release-test-")
		if err != nil {
			dist.err = err
			return
		}
		dist.dir = filepath.Join(dir, "dist")
		out, err := releaseSh(version, dist.dir)
		if err != nil {
			dist.err = fmt.Errorf("scripts/release.sh %s: %w\n%s", version, err, out)
		}
	})
	if dist.err != nil {
		t.Fatal(dist.err)
	}
	return dist.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dist.dir != "" {
		os.RemoveAll(filepath.Dir(dist.dir))
	}
	os.Exit(code)
}

func releaseSh(v, dir string) ([]byte, error) {
	cmd := exec.Command("scripts/release.sh", v, dir)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+sourceDateEpoch)
	return cmd.CombinedOutput()
}

// run runs a program and returns its stdout, failing the test on an error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// The exact set of files, each listed in SHA256SUMS with its real digest.
func TestReleaseFilesAndChecksums(t *testing.T) {
	d := release(t)
	want := []string{
		"SHA256SUMS",
		"tether-" + version + ".oci.tar",
		"tether-" + version + "-darwin-amd64",
		"tether-" + version + "-darwin-arm64",
		"tether-" + version + "-linux-amd64",
		"tether-" + version + "-linux-arm64",
		"tether-gc-" + strings.TrimPrefix(version, "v") + ".tgz",
		"tether-gc-cluster-" + version + ".yaml",
		"tether-gc-namespaced-" + version + ".yaml",
		"tether-pool-" + strings.TrimPrefix(version, "v") + ".tgz",
		"tether-pool-" + version + ".yaml",
		"tether-pool-" + version + "-darwin-amd64",
		"tether-pool-" + version + "-darwin-arm64",
		"tether-pool-" + version + "-linux-amd64",
		"tether-pool-" + version + "-linux-arm64",
		"tether-shim-" + version + ".oci.tar",
		"tether-shim-" + version + "-linux-amd64",
		"tether-shim-" + version + "-linux-arm64",
		"tether-stage-" + version + "-darwin-amd64",
		"tether-stage-" + version + "-darwin-arm64",
		"tether-stage-" + version + "-linux-amd64",
		"tether-stage-" + version + "-linux-arm64",
	}
	entries, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("dist holds %v, want %v", got, want)
	}
	sums, err := os.ReadFile(filepath.Join(d, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's format", sc.Text())
		}
		b, err := os.ReadFile(filepath.Join(d, name))
		if err != nil {
			t.Fatalf("SHA256SUMS lists %s: %v", name, err)
		}
		h := sha256.Sum256(b)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s has a different digest", name)
		}
		listed[name] = true
	}
	for _, name := range want {
		if name != "SHA256SUMS" && !listed[name] {
			t.Errorf("SHA256SUMS lacks %s", name)
		}
	}
}

// Each binary is for its platform and static (tether-stage the C build on
// linux/amd64); those this machine can run (natively or under
// qemu-user-static) report the release's version, and the
// CLI defaults --helper-image to the release's shim image.
func TestReleaseBinaries(t *testing.T) {
	d := release(t)
	for _, p := range []struct{ name, os, arch string }{
		{"tether", "linux", "amd64"}, {"tether", "linux", "arm64"},
		{"tether", "darwin", "amd64"}, {"tether", "darwin", "arm64"},
		{"tether-pool", "linux", "amd64"}, {"tether-pool", "linux", "arm64"},
		{"tether-pool", "darwin", "amd64"}, {"tether-pool", "darwin", "arm64"},
		{"tether-shim", "linux", "amd64"}, {"tether-shim", "linux", "arm64"},
		{"tether-stage", "linux", "amd64"}, {"tether-stage", "linux", "arm64"},
		{"tether-stage", "darwin", "amd64"}, {"tether-stage", "darwin", "arm64"},
	} {
		path := filepath.Join(d, p.name+"-"+version+"-"+p.os+"-"+p.arch)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if p.os == "darwin" {
			checkMachO(t, path, b, p.arch)
			continue
		}
		if err := ociimage.CheckStaticELF(b, p.arch); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	tether := filepath.Join(d, "tether-"+version+"-linux-"+runtime.GOARCH)
	if out := run(t, tether, "version"); !strings.HasPrefix(out, "tether "+version+" ") {
		t.Errorf("tether version: %q", out)
	}
	pool := filepath.Join(d, "tether-pool-"+version+"-linux-"+runtime.GOARCH)
	if out := run(t, pool, "version"); out != "tether-pool "+version+"\n" {
		t.Errorf("tether-pool version: %q", out)
	}
	help := run(t, tether, "run", "--help")
	if want := "(default " + contract.ShimImageRepository + ":" + version + ")"; !strings.Contains(help, want) {
		t.Errorf("tether run --help does not show --helper-image %s:\n%s", want, help)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		stage := filepath.Join(d, "tether-stage-"+version+"-linux-"+arch)
		argv := emulated(t, arch, stage)
		if out := run(t, argv[0], append(argv[1:], "--version")...); out != "tether-stage "+version+"\n" {
			t.Errorf("linux/%s tether-stage --version: %q", arch, out)
		}
	}
	// On linux/amd64 tether-stage is the C build (scripts/build-stage.sh),
	// which CI's machine can always make: not a Go program.
	if runtime.GOARCH == "amd64" && hasCC() {
		stage := filepath.Join(d, "tether-stage-"+version+"-linux-amd64")
		if _, err := buildinfo.ReadFile(stage); err == nil {
			t.Errorf("%s is the Go build, with a C compiler here: want the C build", stage)
		}
	}
	for _, arch := range []string{"amd64", "arm64"} {
		shim := filepath.Join(d, "tether-shim-"+version+"-linux-"+arch)
		argv := emulated(t, arch, shim)
		if out := run(t, argv[0], append(argv[1:], "--version")...); out != "tether-shim "+version+"\n" {
			t.Errorf("linux/%s tether-shim --version: %q", arch, out)
		}
		if out := run(t, argv[0], append(argv[1:], "--help")...); !strings.Contains(out, "Usage") && !strings.Contains(out, "usage") {
			t.Errorf("linux/%s tether-shim --help printed no usage on stdout: %q", arch, out)
		}
	}
}

// hasCC reports whether a C compiler (cc, gcc) is on PATH.
func hasCC() bool {
	for _, cc := range []string{"cc", "gcc"} {
		if _, err := exec.LookPath(cc); err == nil {
			return true
		}
	}
	return false
}

// qemuNames are qemu-user-static's program names by GOARCH.
var qemuNames = map[string]string{"amd64": "qemu-x86_64-static", "arm64": "qemu-aarch64-static"}

// emulated returns the command line that runs a linux/arch program here:
// the program itself on this architecture, else under qemu-user-static.
func emulated(t *testing.T, arch, path string) []string {
	t.Helper()
	if arch == runtime.GOARCH {
		return []string{path}
	}
	q, err := exec.LookPath(qemuNames[arch])
	if err != nil {
		t.Fatalf("running the linux/%s binary needs %s: apt-get install qemu-user-static (%v)", arch, qemuNames[arch], err)
	}
	return []string{q, path}
}

func checkMachO(t *testing.T, path string, b []byte, arch string) {
	t.Helper()
	f, err := macho.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Errorf("%s: not a Mach-O binary: %v", path, err)
		return
	}
	want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[arch]
	if f.Cpu != want || f.Type != macho.TypeExec {
		t.Errorf("%s: Mach-O cpu %v type %v, want %v executable", path, f.Cpu, f.Type, want)
	}
}

// Both images are linux/amd64 + linux/arm64 indexes named for the release,
// each platform holding only its static binary (the same bytes as the
// release's binary; the tether image also tether-pool, which `tether pool
// serve` runs from beside it, and tether-stage, GitLab's run_exec), run as
// 65532 with OCI labels; the shim image fits its budget.
func TestReleaseImages(t *testing.T) {
	d := release(t)
	for _, img := range []struct {
		name, repo string
		beside     []string
	}{
		{"tether-shim", contract.ShimImageRepository, nil},
		{"tether", contract.CLIImageRepository, []string{"tether-pool", "tether-stage"}},
	} {
		t.Run(img.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(d, img.name+"-"+version+".oci.tar"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			a, err := ociimage.ReadArchive(f)
			if err != nil {
				t.Fatal(err)
			}
			ref := img.repo + ":" + version
			_, images, err := a.Images(ref)
			if err != nil {
				t.Fatalf("%v (index.json: %+v)", err, a.Index)
			}
			var platforms []string
			for _, pi := range images {
				p := pi.Platform.String()
				platforms = append(platforms, p)
				if len(pi.Files) != 1+len(img.beside) {
					t.Errorf("%s holds %d files, want only /%s and %v", p, len(pi.Files), img.name, img.beside)
				}
				for _, name := range img.beside {
					want, err := os.ReadFile(filepath.Join(d, name+"-"+version+"-linux-"+pi.Platform.Architecture))
					if err != nil {
						t.Fatal(err)
					}
					if f, ok := pi.Files["/"+name]; !ok || !bytes.Equal(f.Data, want) || f.Mode != 0o755 {
						t.Errorf("%s: /%s is not the release's %s (present %v)", p, name, name, ok)
					}
				}
				bin, ok := pi.Files["/"+img.name]
				if !ok {
					t.Fatalf("%s has no /%s", p, img.name)
				}
				if err := ociimage.CheckStaticELF(bin.Data, pi.Platform.Architecture); err != nil {
					t.Errorf("%s /%s: %v", p, img.name, err)
				}
				want, err := os.ReadFile(filepath.Join(d, img.name+"-"+version+"-linux-"+pi.Platform.Architecture))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(bin.Data, want) {
					t.Errorf("%s /%s is not the release's binary", p, img.name)
				}
				c := pi.Config.Config
				if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/" + img.name}) || bin.Mode != 0o755 {
					t.Errorf("%s: user %q entrypoint %q mode %v", p, c.User, c.Entrypoint, bin.Mode)
				}
				if c.Labels["org.opencontainers.image.version"] != version || c.Labels["org.opencontainers.image.source"] == "" ||
					c.Labels["org.opencontainers.image.licenses"] != "Apache-2.0" || c.Labels["org.opencontainers.image.title"] != img.name {
					t.Errorf("%s labels %v", p, c.Labels)
				}
				size := pi.Manifest.Size
				for _, l := range pi.Layers {
					size += l.Size
				}
				t.Logf("%s %s: %d bytes to pull (%d-byte binary)", ref, p, size, len(bin.Data))
				if img.name == "tether-shim" && size > shimImageBudget {
					t.Errorf("%s %s weighs %d bytes, over the %d-byte budget", ref, p, size, shimImageBudget)
				}
			}
			if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
				t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
			}
		})
	}
}

// A second release of the same tree is the same, byte for byte: binaries,
// image archives (so their digests), chart and manifests.
func TestReleaseIsReproducible(t *testing.T) {
	d := release(t)
	again := filepath.Join(t.TempDir(), "dist")
	if out, err := releaseSh(version, again); err != nil {
		t.Fatalf("scripts/release.sh %s (again): %v\n%s", version, err, out)
	}
	a, err := os.ReadFile(filepath.Join(d, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(again, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("two releases of the same tree differ:\n%s\n---\n%s", a, b)
	}
}

// The packaged charts' appVersion is the release and their workloads (the
// cleaner's CronJob, the pools' controller's Deployment) run the release's
// CLI image; so do the plain manifests.
func TestReleaseChartAndManifests(t *testing.T) {
	d := release(t)
	helm := strings.TrimSpace(run(t, filepath.Join(repoRoot, "scripts", "tools.sh"), "helm"))
	want := contract.CLIImageRepository + ":" + version
	for _, name := range []string{"tether-gc", "tether-pool"} {
		chart := filepath.Join(d, name+"-"+strings.TrimPrefix(version, "v")+".tgz")
		var meta struct {
			Version    string `json:"version"`
			AppVersion string `json:"appVersion"`
		}
		if err := sigsyaml.Unmarshal([]byte(run(t, helm, "show", "chart", chart)), &meta); err != nil {
			t.Fatal(err)
		}
		if meta.AppVersion != version || meta.Version != strings.TrimPrefix(version, "v") {
			t.Errorf("%s chart version %q appVersion %q", name, meta.Version, meta.AppVersion)
		}
		if img := workloadImage(t, name+" helm template", run(t, helm, "template", "r", chart, "--namespace", "ci")); img != want {
			t.Errorf("the packaged %s chart runs %q, want %q", name, img, want)
		}
	}
	for _, file := range []string{"tether-gc-namespaced", "tether-gc-cluster", "tether-pool"} {
		b, err := os.ReadFile(filepath.Join(d, file+"-"+version+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if img := workloadImage(t, file, string(b)); img != want {
			t.Errorf("the %s manifests run %q, want %q", file, img, want)
		}
	}
}

// workloadImage decodes a multi-document YAML stream strictly and returns
// the image of its only workload: a CronJob or a Deployment.
func workloadImage(t *testing.T, what, stream string) string {
	t.Helper()
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	yr := kyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	var images []string
	for {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || !bytes.Contains(doc, []byte("kind:")) {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: decode %s: %v", what, doc, err)
		}
		switch o := obj.(type) {
		case *batchv1.CronJob:
			images = append(images, o.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image)
		case *appsv1.Deployment:
			images = append(images, o.Spec.Template.Spec.Containers[0].Image)
		}
	}
	if len(images) != 1 {
		t.Fatalf("%s: %d CronJobs and Deployments, want 1", what, len(images))
	}
	return images[0]
}

// release.sh refuses what is not a release version, as contract.IsRelease
// (which picks the default image tag) does, naming VERSION.
func TestReleaseRejectsBadVersions(t *testing.T) {
	for _, v := range []string{"", "1.2.3", "v1.2", "v1.2.3-dirty", "v1.2.3-4-g9dcbf13", "dev"} {
		if contract.IsRelease(v) {
			t.Errorf("contract.IsRelease(%q) = true", v)
		}
		out, err := releaseSh(v, filepath.Join(t.TempDir(), "dist"))
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "VERSION") {
			t.Errorf("release.sh %q: %v, %s; want exit 2 naming VERSION", v, err, out)
		}
	}
	if !contract.IsRelease(version) {
		t.Errorf("contract.IsRelease(%q) = false", version)
	}
}
