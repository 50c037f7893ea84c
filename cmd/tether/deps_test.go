package main

import (
	"os/exec"
	"strings"
	"testing"
)

// tether links none of the pools' controller's packages: Go initialises
// every linked package at each start of every command, and `tether run`
// is latency-bound. tether-pool (cmd/tether-pool) links them instead.
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
		"k8s.io/client-go/informers=", // the factory of every API group's informers (the pod informer is informers/core/v1)
		"k8s.io/client-go/tools/leaderelection",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			exact, only := strings.CutSuffix(f, "=")
			if pkg == exact || !only && strings.HasPrefix(pkg, f+"/") {
				t.Errorf("tether links %s: the controller's packages belong in tether-pool (cmd/tether-pool), which `tether pool serve` runs", pkg)
			}
		}
	}
}
