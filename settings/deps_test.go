package settings

import (
	"testing"

	"github.com/tether-ci/tether/internal/testing/deps"
)

// The settings layer sits below every integration: of the project's own
// packages it uses client/kube (and what that uses) alone, never a
// command, an integration (integration/gitlab, …) or the shim.
func TestSettingsDependencies(t *testing.T) {
	allowed := deps.Project(t, "../client/kube")
	for pkg := range deps.Project(t, ".") {
		if pkg != "settings" && !allowed[pkg] {
			t.Errorf("settings depends on %s; it may use client/kube and its dependencies only (integrations import settings, never the reverse)", pkg)
		}
	}
}
