package gitlab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client/kube"
	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
)

// --termination-grace-period takes GitLab's seconds or a duration, from
// the command line or the config file, and puts it on the job's pod; bad
// values are refused naming the setting.
func TestTerminationGracePeriodSetting(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "driver.yaml")
	if err := os.WriteFile(cfgFile, []byte("termination-grace-period: 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"--termination-grace-period", "5"}, 5 * time.Second},
		{[]string{"--termination-grace-period=2m"}, 2 * time.Minute},
		{[]string{"--termination-grace-period", "1s"}, time.Second},
		{[]string{"--config", cfgFile}, 7 * time.Second},
		{[]string{"--config", cfgFile, "--termination-grace-period", "3"}, 3 * time.Second}, // the command line wins
		{nil, 0},
	} {
		cfg := gitlabTestFlags(t, append([]string{"--image", "alpine", "--gitlab-helper-image", "none"}, tc.args...)...)
		spec, err := gitlabSpec(cfg, &gitlab.Job{}, "p", func(string) string { return "" })
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if spec.TerminationGracePeriod != tc.want || time.Duration(cfg.TerminationGrace) != tc.want {
			t.Errorf("%v: spec grace %s, setting %s; want %s", tc.args, spec.TerminationGracePeriod, time.Duration(cfg.TerminationGrace), tc.want)
		}
		spec.Namespace = "ci"
		objs, err := kube.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		got := objs.Pod.Spec.TerminationGracePeriodSeconds
		switch {
		case tc.want == 0 && got != nil:
			t.Errorf("%v: terminationGracePeriodSeconds %d; want none (Kubernetes' default)", tc.args, *got)
		case tc.want != 0 && (got == nil || *got != int64(tc.want/time.Second)):
			t.Errorf("%v: terminationGracePeriodSeconds %v; want %d", tc.args, got, int64(tc.want/time.Second))
		}
	}

	for _, bad := range []struct{ value, want string }{
		{"soon", "want whole seconds (30) or a duration (30s, 2m)"},
		{"0", "want at least 1s"},
		{"0s", "want at least 1s"},
		{"-5", "want at least 1s"},
		{"500ms", "want at least 1s"},
		{"1.5s", "want whole seconds"},
		{"25h", "want at most 24h0m0s"},
		{"99999999999999999", "want at most 24h0m0s"},
	} {
		var f Settings
		_, err := Parse(&f, []string{"--termination-grace-period", bad.value}, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), "--termination-grace-period") || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v; want one naming --termination-grace-period and saying %q", bad.value, err, bad.want)
		}
	}
	badCfg := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badCfg, []byte("termination-grace-period: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var f Settings
	if _, err := Parse(&f, []string{"--config", badCfg}, func(string) string { return "" }); err == nil ||
		!strings.Contains(err.Error(), `key "termination-grace-period"`) || !strings.Contains(err.Error(), "want at least 1s") {
		t.Errorf("config file grace 0: %v; want an error naming the key", err)
	}
}
