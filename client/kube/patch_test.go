package kube

import (
	"strings"
	"testing"
)

// A strategic merge patch adds a label, an env var on the build container
// (merged by name) and host networking; everything Tether set stays.
func TestPodPatchStrategic(t *testing.T) {
	for _, typ := range []PatchType{PatchStrategic, PatchDetect} {
		s := testSpec()
		s.PodPatch = &PodPatch{Type: typ, Data: []byte(`
metadata:
  labels: {team: infra}
spec:
  hostNetwork: true
  containers:
  - name: build
    env: [{name: FROM_PATCH, value: "yes"}]
`)}
		objs, err := Build(s)
		if err != nil {
			t.Fatalf("%q: %v", typ, err)
		}
		pod := objs.Pod
		b := container(pod.Spec.Containers, BuildContainer)
		if pod.Labels["team"] != "infra" || pod.Labels[LabelManagedBy] != ManagedByValue || !pod.Spec.HostNetwork {
			t.Errorf("%q: labels %v hostNetwork %v", typ, pod.Labels, pod.Spec.HostNetwork)
		}
		if len(pod.Spec.Containers) != 1 || len(b.Env) != 1 || b.Env[0].Value != "yes" || b.Command[0] != ShimPath || !b.Stdin {
			t.Errorf("%q: build container %+v", typ, b)
		}
	}
}

// A JSON patch (given as JSON or detected from YAML's list) applies too.
func TestPodPatchJSON(t *testing.T) {
	for _, p := range []*PodPatch{
		{Type: PatchJSON, Data: []byte(`[{"op":"add","path":"/spec/priorityClassName","value":"high"}]`)},
		{Data: []byte("- op: add\n  path: /spec/priorityClassName\n  value: high\n")},
	} {
		s := testSpec()
		s.PodPatch = p
		objs, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		if objs.Pod.Spec.PriorityClassName != "high" {
			t.Errorf("%s: priorityClassName %q", p.Data, objs.Pod.Spec.PriorityClassName)
		}
	}
}

// A patch that breaks one of Tether's invariants is an error naming the
// field; so are unreadable patches.
func TestPodPatchRefused(t *testing.T) {
	for _, tc := range []struct {
		typ        PatchType
		data, want string
	}{
		{"", "spec:\n  containers:\n  - name: build\n    command: [sleep, '3600']\n",
			"pod patch changes spec.containers[build].command: the build container must run tether-shim"},
		{"", "spec:\n  containers:\n  - name: build\n    args: [--oops]\n", "spec.containers[build].args"},
		{"", "spec:\n  containers:\n  - name: build\n    stdinOnce: true\n", "spec.containers[build].stdin/stdinOnce"},
		{"json", `[{"op":"remove","path":"/spec/containers/0"}]`, "spec.containers[build]: the build container must stay"},
		{"json", `[{"op":"remove","path":"/spec/volumes/0"}]`, "spec.volumes[tether]"},
		{"json", `[{"op":"remove","path":"/spec/containers/0/volumeMounts/0"}]`, "spec.containers[build].volumeMounts[tether]"},
		{"", "spec:\n  initContainers:\n  - name: tether-init\n    image: evil\n", "spec.initContainers[tether-init]"},
		{"", "metadata:\n  labels: {" + LabelManagedBy + ": other}\n", "metadata.labels[" + LabelManagedBy + "]"},
		{"", "metadata:\n  annotations: {" + AnnotationTTL + ": '999999'}\n", "metadata.annotations[" + AnnotationTTL + "]"},
		{"", "spec:\n  restartPolicy: Always\n", "spec.restartPolicy"},
		{"", "metadata:\n  name: other\n", "metadata.name"},
		{"", "spec:\n  hostNetwrk: true\n", "not a valid pod"},
		{"", "spec: [unclosed\n", "neither YAML nor JSON"},
		{"json", `{"op":"add"}`, "not a JSON patch"},
		{"merge", "{}", `unknown pod patch type "merge"`},
	} {
		s := testSpec()
		s.PodPatch = &PodPatch{Type: tc.typ, Data: []byte(tc.data)}
		_, err := Build(s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v; want one containing %q", tc.data, err, tc.want)
		}
	}
}
