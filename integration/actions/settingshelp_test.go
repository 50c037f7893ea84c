package actions

import (
	"slices"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client/kube"
)

// Every variable the hook reads is in SettingsTable, and its help shows
// each one.
func TestSettingsTableIsComplete(t *testing.T) {
	read := map[string]bool{}
	getenv := func(k string) string { read[k] = true; return "" }
	if _, err := SettingsFromEnv(getenv); err != nil {
		t.Fatal(err)
	}
	_ = addExternals(&kube.Spec{}, getenv, nil)
	read[EnvHookTemplate] = true // prepare_job reads it (planShape)
	read[EnvRunnerPodName] = true
	var names []string
	for _, s := range SettingsTable {
		names = append(names, s.Name)
	}
	help := SettingsHelp()
	for k := range read {
		if !slices.Contains(names, k) {
			t.Errorf("the hook reads %s, which SettingsTable lacks", k)
		}
	}
	for _, n := range names {
		if !strings.Contains(help, "  "+n+" ") && !strings.Contains(help, "  "+n+"\n") {
			t.Errorf("the help lacks %s:\n%s", n, help)
		}
	}
}
