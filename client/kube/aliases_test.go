package kube

import (
	"slices"
	"strings"
	"testing"
)

// Spec.CommandAliases become --command-alias flags of the build
// container's shim and the helper container's, with the shim-from-image
// pod and its fallback alike; a pod without them has none.
func TestBuildCommandAliases(t *testing.T) {
	spec := testSpec()
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if args := objs.Pod.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--command-alias") }) {
		t.Fatalf("a pod without aliases: args %v", args)
	}
	spec.Helper = &Helper{Image: "registry.example/helper:1"}
	spec.ShimFrom = ShimFromImage
	spec.CommandAliases = []CommandAlias{{Name: "gitlab-runner", Target: "gitlab-runner-helper"}, {Name: "tool", Target: "/opt/bin/tool"}}
	if objs, err = Build(spec); err != nil {
		t.Fatal(err)
	}
	want := []string{"--command-alias=gitlab-runner=gitlab-runner-helper", "--command-alias=tool=/opt/bin/tool"}
	for _, pod := range []struct {
		what string
		args [][]string
	}{
		{"pod", [][]string{objs.Pod.Spec.Containers[0].Args, objs.Pod.Spec.InitContainers[0].Args}},
		{"fallback", [][]string{objs.Fallback.Spec.Containers[0].Args, objs.Fallback.Spec.InitContainers[1].Args}},
	} {
		for i, args := range pod.args {
			var got []string
			for _, a := range args {
				if strings.HasPrefix(a, "--command-alias") {
					got = append(got, a)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s container %d: alias args %v, want %v (all args %v)", pod.what, i, got, want, args)
			}
		}
	}
	if objs.Pod.Spec.InitContainers[0].Name != HelperContainer || objs.Fallback.Spec.InitContainers[1].Name != HelperContainer {
		t.Fatalf("helper container not where the test looks: %v / %v", names(objs.Pod.Spec.InitContainers), names(objs.Fallback.Spec.InitContainers))
	}
}

func TestBuildCommandAliasErrors(t *testing.T) {
	for _, a := range []CommandAlias{{"", "t"}, {"n", ""}, {"a/b", "t"}, {"..", "t"}, {"n", "rel/t"}, {"n,m", "t"}, {"n", "t=u"}, {"n m", "t"}} {
		spec := testSpec()
		spec.CommandAliases = []CommandAlias{a}
		if _, err := Build(spec); err == nil || !strings.Contains(err.Error(), "command alias") {
			t.Errorf("alias %+v: %v", a, err)
		}
	}
}
