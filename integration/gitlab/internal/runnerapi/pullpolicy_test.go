package runnerapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// A job chooses its images' pull policies only among those the runner
// allows; the first allowed one it asks wins, as with GitLab Runner's
// Kubernetes executor.
func TestJobPullPolicy(t *testing.T) {
	for _, tc := range []struct {
		asked, allowed []string
		want, err      string
	}{
		{asked: nil, allowed: nil, want: ""},
		{asked: nil, allowed: []string{"Never"}, want: ""},
		{asked: []string{"if-not-present"}, allowed: []string{"IfNotPresent"}, want: "IfNotPresent"},
		{asked: []string{"always", "if-not-present"}, allowed: []string{"Never", "IfNotPresent"}, want: "IfNotPresent"},
		{asked: []string{"always", "if-not-present"}, allowed: []string{"IfNotPresent", "Always"}, want: "Always"},
		{asked: []string{"Never"}, allowed: []string{"Never"}, want: "Never"},
		{asked: []string{"always"}, allowed: nil, err: "allows no pull policy for jobs to choose: set allowed-pull-policies"},
		{asked: []string{"always"}, allowed: []string{"IfNotPresent", "Never"}, err: "pull_policy always in .gitlab-ci.yml is not one of the driver config's allowed-pull-policies (IfNotPresent, Never)"},
		{asked: []string{"sometimes"}, allowed: []string{"Always"}, err: `pull policy "sometimes": want always, if-not-present or never`},
	} {
		got, err := JobPullPolicy(tc.asked, tc.allowed, "the job's image")
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "the job's image: ")):
			t.Errorf("JobPullPolicy(%q, %q) = %q, %v; want an error saying %q", tc.asked, tc.allowed, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("JobPullPolicy(%q, %q) = %q, %v; want %q", tc.asked, tc.allowed, got, err, tc.want)
		}
	}
}

// The runner's job response carries image:pull_policy as a list.
func TestJobResponsePullPolicy(t *testing.T) {
	var j Job
	raw := `{"image":{"name":"alpine","pull_policy":["if-not-present","always"]},"services":[{"name":"postgres","pull_policy":["never"]}]}`
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		t.Fatal(err)
	}
	if strings.Join(j.Image.PullPolicies, ",") != "if-not-present,always" || len(j.Services) != 1 || strings.Join(j.Services[0].PullPolicies, ",") != "never" {
		t.Fatalf("pull policies: image %q, services %+v", j.Image.PullPolicies, j.Services)
	}
}
