package main

import (
	"os/exec"
	"strings"
	"testing"
)

// tether links none of the pools' controller's packages, nor client-go's
// typed clientset: Go initialises every linked package at each start of
// every command, and `tether run` is latency-bound. tether-pool
// (cmd/tether-pool) links them instead.
func TestDependenciesLeaveOutTheController(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	// Each package, and those below it unless the entry ends in "=".
	forbidden := []string{
		"github.com/tether-ci/tether/internal/poolctl",
		"github.com/tether-ci/tether/internal/poolcmd",
		"github.com/prometheus",
		"k8s.io/client-go/tools/leaderelection",
		// The typed clientset's scheme registers all of Kubernetes' API
		// groups (and links each group's types) when the process starts,
		// tens of milliseconds before main on every command: tether calls
		// the API through client/kube/kubeapi (a scheme of the four groups
		// it uses) instead. gentype links client-go's fake (testing) and
		// with it structured-merge-diff's typed machinery; discovery links
		// the OpenAPI models.
		"k8s.io/client-go/kubernetes",
		"k8s.io/client-go/informers",
		"k8s.io/client-go/gentype",
		"k8s.io/client-go/testing",
		"k8s.io/client-go/discovery",
		"k8s.io/client-go/applyconfigurations",
		"github.com/tether-ci/tether/client/kube/kubeapi/clientset",
		// apimachinery's runtime itself imports structured-merge-diff's
		// value package; the rest of it (typed, merge, schema) is the
		// server-side apply machinery.
		"sigs.k8s.io/structured-merge-diff/v6/typed",
		"sigs.k8s.io/structured-merge-diff/v6/merge",
		"sigs.k8s.io/structured-merge-diff/v6/schema",
		"sigs.k8s.io/structured-merge-diff/v6/fieldpath",
		// A strategic merge pod patch is applied by client/kube's own merge:
		// apimachinery's strategicpatch links kube-openapi and with it the
		// OpenAPI models (gnostic) and Google's protobuf runtime, whose
		// package init runs at every start.
		"k8s.io/apimachinery/pkg/util/strategicpatch",
		"k8s.io/kube-openapi",
		"github.com/google/gnostic-models",
		"google.golang.org/protobuf",
		// An Actions container step's image config is read by
		// integration/actions' own registry client: go-containerregistry
		// links go-digest, image-spec, zstd and estargz, all initialised at
		// every start.
		"github.com/google/go-containerregistry",
		"github.com/opencontainers/go-digest",
		"github.com/klauspost/compress",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			exact, only := strings.CutSuffix(f, "=")
			if pkg == exact || !only && strings.HasPrefix(pkg, f+"/") {
				t.Errorf("tether links %s (forbidden: %s): see the reason beside the list", pkg, f)
			}
		}
	}
}
