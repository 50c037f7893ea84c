package actions

import "testing"

// Every container of the job, services too, gets GITHUB_ACTIONS=true and
// CI=true as the runner's docker containers do (actions/runner
// DockerCommandManager.cs); a container's own CI wins.
func TestJobSpecCIVariables(t *testing.T) {
	args := &PrepareJobArgs{
		Container: &Container{Image: "bash", EnvironmentVariables: map[string]string{"CI": "false"}},
		Services: []Container{
			{Image: "redis"},
			{Image: "postgres", EnvironmentVariables: map[string]string{"CI": "no", "POSTGRES_PASSWORD": "pw"}},
		},
	}
	spec, err := jobSpec(Settings{}, args, "ns", "")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Env["CI"] != "false" || spec.Env["GITHUB_ACTIONS"] != "true" {
		t.Errorf("job container env %v: want CI=false (its own), GITHUB_ACTIONS=true", spec.Env)
	}
	if len(spec.Services) != 2 {
		t.Fatalf("services %+v", spec.Services)
	}
	if e := spec.Services[0].Env; e["CI"] != "true" || e["GITHUB_ACTIONS"] != "true" {
		t.Errorf("service without env: %v, want CI=true, GITHUB_ACTIONS=true", e)
	}
	if e := spec.Services[1].Env; e["CI"] != "no" || e["GITHUB_ACTIONS"] != "true" || e["POSTGRES_PASSWORD"] != "pw" {
		t.Errorf("service with env: %v, want its CI and variables, GITHUB_ACTIONS=true", e)
	}
}
