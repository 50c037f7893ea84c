package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// diffBasePod is a built job pod with more of each merged list than Build
// makes: containers, env, ports, mounts, volumes, tolerations, pull
// secrets, host aliases and finalizers to merge into.
func diffBasePod(t testing.TB) []byte {
	t.Helper()
	s := testSpec()
	objs, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	pod.Finalizers = []string{"a/one", "b/two", "c/three"}
	pod.Annotations["note"] = "x"
	b := &pod.Spec.Containers[0]
	b.Env = append(b.Env, corev1.EnvVar{Name: "A", Value: "1"}, corev1.EnvVar{Name: "B", Value: "2"}, corev1.EnvVar{Name: "C", Value: "3"})
	b.Ports = []corev1.ContainerPort{{ContainerPort: 80, Name: "http"}, {ContainerPort: 443, Name: "https"}}
	b.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	pod.Spec.Containers = append(pod.Spec.Containers,
		corev1.Container{Name: "svc-0", Image: "redis", Env: []corev1.EnvVar{{Name: "X", Value: "x"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}},
		corev1.Container{Name: "svc-1", Image: "postgres", Args: []string{"-c", "fsync=off"}})
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "ci", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg-a"}, {Name: "reg-b"}}
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "127.0.0.2", Hostnames: []string{"cache"}}}
	pod.Spec.NodeSelector = map[string]string{"pool": "ci", "arch": "amd64"}
	out, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// referenceMerge is apimachinery's strategic merge, a panic as an error.
func referenceMerge(orig, patch []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return strategicpatch.StrategicMergePatch(orig, patch, corev1.Pod{})
}

// compareMerges applies patch with Tether's merge and apimachinery's; it
// reports a difference, and whether apimachinery's answer was one (it
// iterates Go maps, so a patch whose keys depend on each other's order may
// give different answers).
func compareMerges(orig, patch []byte) (diff string, deterministic bool) {
	ref, refErr := referenceMerge(orig, patch)
	for range 3 {
		again, againErr := referenceMerge(orig, patch)
		if (againErr == nil) != (refErr == nil) || !bytes.Equal(again, ref) {
			return "", false
		}
	}
	got, err := strategicMerge(orig, patch, reflect.TypeFor[corev1.Pod]())
	switch {
	case refErr != nil && err == nil:
		return fmt.Sprintf("apimachinery fails (%v), Tether's merge gives\n%s", refErr, got), true
	case refErr == nil && err != nil:
		return fmt.Sprintf("Tether's merge fails (%v), apimachinery gives\n%s", err, ref), true
	case refErr == nil && !bytes.Equal(got, ref):
		return fmt.Sprintf("Tether's merge gives\n%s\napimachinery gives\n%s", got, ref), true
	}
	return "", true
}

// diffCorpus is the differential test's patches (YAML, as users write
// them): GitLab's documented pod_spec examples, every directive, nested
// lists, null deletions and edge cases.
var diffCorpus = []string{
	// GitLab's pod_spec examples (as a pod patch: under spec).
	`spec: {hostname: custom-pod-hostname}`,
	`spec: {containers: [{name: build, env: [{name: env1, value: value1}, {name: env2, value: value2}]}]}`,
	`spec: {containers: [{name: build, resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {cpu: "2"}}}]}`,
	`spec: {containers: [{name: build, securityContext: {privileged: false, capabilities: {drop: [ALL]}}}]}`,
	`spec: {dnsPolicy: None, dnsConfig: {nameservers: [1.1.1.1], searches: [ci.local], options: [{name: ndots, value: "2"}]}}`,
	`spec: {volumes: [{name: cache, hostPath: {path: /var/cache}}], containers: [{name: build, volumeMounts: [{name: cache, mountPath: /cache}]}]}`,
	`spec: {nodeSelector: {disktype: ssd}, tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]}`,
	`spec: {hostNetwork: true, priorityClassName: high}`,
	`metadata: {labels: {team: infra}, annotations: {cost-center: "42"}}`,
	// Merge-key lists: merge, add, reorder.
	`spec: {containers: [{name: build, env: [{name: B, value: changed}, {name: NEW, value: n}]}]}`,
	`spec: {containers: [{name: svc-1, image: postgres:16}, {name: build, env: [{name: A, value: a}]}]}`,
	`spec: {containers: [{name: sidecar, image: busybox, command: [sleep, "1"]}]}`,
	`spec: {containers: [{name: sidecar, image: busybox}, {name: svc-0, image: redis:7}]}`,
	`spec: {containers: [{name: build, ports: [{containerPort: 8080, name: alt}, {containerPort: 80, name: web}]}]}`,
	`spec: {containers: [{name: svc-0, volumeMounts: [{mountPath: /data, readOnly: true}, {name: cfg, mountPath: /cfg}]}]}`,
	`spec: {volumes: [{name: data, emptyDir: {medium: Memory}}]}`,
	`spec: {imagePullSecrets: [{name: reg-c}, {name: reg-a}]}`,
	`spec: {hostAliases: [{ip: 127.0.0.2, hostnames: [cache2]}, {ip: 127.0.0.3, hostnames: [db]}]}`,
	`spec: {initContainers: [{name: prep, image: busybox, command: [true]}]}`,
	// Lists without a merge strategy are replaced.
	`spec: {tolerations: [{key: other, operator: Exists}]}`,
	`spec: {containers: [{name: svc-1, args: [--new]}]}`,
	// Lists of scalars with the merge strategy (finalizers) are sets.
	`metadata: {finalizers: [d/four, a/one]}`,
	`metadata: {finalizers: [b/two]}`,
	`metadata: {finalizers: []}`,
	// null deletes.
	`metadata: {annotations: {note: null}}`,
	`spec: {nodeSelector: null}`,
	`spec: {nodeSelector: {pool: null, zone: a}}`,
	`spec: {containers: [{name: build, resources: {limits: {cpu: null}}}]}`,
	`spec: {containers: [{name: svc-0, env: null}]}`,
	`spec: {tolerations: null, hostAliases: null}`,
	`spec: {containers: [{name: added, image: busybox, env: [{name: Z, value: null}], workingDir: null}]}`,
	`spec: {securityContext: {runAsUser: 1000, fsGroup: null}}`,
	// $patch directives.
	`spec: {containers: [{name: svc-1, $patch: delete}]}`,
	`spec: {containers: [{name: svc-0, $patch: delete}, {name: svc-1, $patch: delete}, {name: extra, image: busybox}]}`,
	`spec: {volumes: [{name: cfg, $patch: delete}]}`,
	`spec: {imagePullSecrets: [{name: reg-a, $patch: delete}]}`,
	`spec: {containers: [{name: build, env: [{name: A, $patch: delete}, {name: D, value: "4"}]}]}`,
	`spec: {containers: [{name: build, ports: [{containerPort: 443, $patch: delete}]}]}`,
	`spec: {nodeSelector: {$patch: replace, only: this}}`,
	`spec: {nodeSelector: {$patch: delete}}`,
	`metadata: {annotations: {$patch: replace, a: b}}`,
	`spec: {containers: [{name: svc-0, resources: {$patch: delete}}]}`,
	`spec: {hostAliases: [{$patch: replace}, {ip: 127.0.0.9, hostnames: [x]}]}`,
	`spec: {imagePullSecrets: [{$patch: replace}, {name: only}]}`,
	`spec: {dnsConfig: {$patch: delete}, affinity: {nodeAffinity: {$patch: delete}}}`,
	`spec: {containers: [{name: build, $patch: replace, image: x}]}`,
	`spec: {nodeSelector: {$patch: bogus}}`,
	`spec: {containers: [{name: svc-0, $patch: bogus}]}`,
	`spec: {containers: [{$patch: delete}]}`,
	// $retainKeys.
	`spec: {volumes: [{name: data, $retainKeys: [name, hostPath], hostPath: {path: /tmp}}]}`,
	`spec: {volumes: [{name: data, $retainKeys: [name, emptyDir], emptyDir: {sizeLimit: 1Gi}}]}`,
	`spec: {volumes: [{name: data, $retainKeys: [hostPath], hostPath: {path: /tmp}}]}`,
	`spec: {volumes: [{name: cfg, $retainKeys: [name, configMap], configMap: {name: other}}]}`,
	`spec: {securityContext: {$retainKeys: [runAsUser], runAsUser: 5}}`,
	`spec: {securityContext: {$retainKeys: not-a-list}}`,
	// $deleteFromPrimitiveList.
	`metadata: {$deleteFromPrimitiveList/finalizers: [b/two, z/none]}`,
	`metadata: {$deleteFromPrimitiveList/finalizers: [a/one], finalizers: [e/five]}`,
	`metadata: {$deleteFromPrimitiveList/finalizers: null}`,
	`metadata: {$deleteFromPrimitiveList/nothere: [x]}`,
	`spec: {containers: [{name: svc-1, $deleteFromPrimitiveList/args: [-c]}]}`,
	`metadata: {$deleteFromPrimitiveListX/finalizers: [a]}`,
	// $setElementOrder (as kubectl apply sends it).
	`spec: {$setElementOrder/containers: [{name: svc-0}, {name: build}, {name: svc-1}]}`,
	`spec: {$setElementOrder/containers: [{name: svc-1}, {name: new}, {name: build}], containers: [{name: new, image: x}]}`,
	`spec: {containers: [{name: build, $setElementOrder/env: [{name: C}, {name: B}, {name: A}]}]}`,
	`spec: {containers: [{name: build, $setElementOrder/env: [{name: C}, {name: X}], env: [{name: C, value: c}, {name: X, value: x}]}]}`,
	`spec: {containers: [{name: build, $setElementOrder/env: [{name: C}, {name: X}], env: [{name: X, value: x}, {name: C, value: c}]}]}`,
	`spec: {containers: [{name: build, $setElementOrder/env: [{name: C}], env: [{name: B, $patch: delete}]}]}`,
	`metadata: {$setElementOrder/finalizers: [c/three, a/one, b/two]}`,
	`metadata: {$setElementOrder/finalizers: [new, c/three], finalizers: [new]}`,
	`spec: {$setElementOrder/tolerations: [{key: x}], tolerations: [{key: x, operator: Exists}]}`,
	`spec: {$setElementOrder/hostAliases: [{ip: 127.0.0.9}], hostAliases: [{ip: 127.0.0.9, hostnames: [y]}]}`,
	`spec: {$setElementOrder/initContainers: [{name: a}], initContainers: [{name: a, image: busybox}]}`,
	`spec: {$setElementOrder/initContainers: [{name: a}]}`,
	`spec: {$setElementOrder/containers: "x"}`,
	`spec: {$setElementOrder/containers: [x]}`,
	`spec: {$setElementOrder/containers: [{a: 1}]}`,
	`spec: {$setElementOrder/bogus: []}`,
	`spec: {$setElementOrderX/containers: []}`,
	`metadata: {$setElementOrder/FINALIZERS: [x], $deleteFromPrimitiveList/Finalizers: [a/one]}`,
	`metadata: {$setElementOrder/finalizers: [{a: 1}]}`,
	// Type changes and edge cases.
	`spec: {nodeSelector: "text"}`,
	`spec: {containers: {name: build}}`,
	`spec: {terminationGracePeriodSeconds: 5}`,
	`spec: {terminationGracePeriodSeconds: 5.5}`,
	`spec: {containers: [{name: build, ports: [{containerPort: 80.0, name: float}]}]}`,
	`spec: {containers: [{image: noname}]}`,
	`spec: {containers: [null]}`,
	`spec: {containers: [build]}`,
	`spec: {containers: [[a]]}`,
	`spec: {containers: [{name: {a: 1}}]}`,
	`metadata: {finalizers: [{a: 1}]}`,
	`metadata: {finalizers: [null]}`,
	`metadata: {finalizers: [x, x, y, x]}`,
	`spec: {unknownField: 1}`,
	`spec: {containers: [{name: build, unknownField: 1}]}`,
	`{}`,
	`null`,
	`spec: null`,
	`metadata: {name: renamed}`,
	`spec: {volumes: [{name: new, emptyDir: {}, $retainKeys: [name]}]}`,
	`spec: {containers: [{name: new, image: x, env: [{name: E, $patch: delete}]}]}`,
	`spec: {overhead: {cpu: 100m}}`,
	`spec: {containers: [{name: build, env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}]}`,
}

// The differential test: every corpus patch gives the same pod (the same
// JSON, byte for byte) or fails in both implementations.
func TestStrategicMergeMatchesAPIMachinery(t *testing.T) {
	orig := diffBasePod(t)
	for _, p := range diffCorpus {
		patch, err := yaml.YAMLToJSON([]byte(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		diff, det := compareMerges(orig, patch)
		if !det {
			t.Errorf("%s: apimachinery's answer depends on map order: not a corpus patch", p)
		}
		if diff != "" {
			t.Errorf("%s:\n%s", p, diff)
		}
	}
}

// $patch: merge in a list is refused with an error that names the JSON
// patch as the way (the API server refuses it too).
func TestStrategicMergeRefusesUnsupportedDirectives(t *testing.T) {
	orig := diffBasePod(t)
	for _, p := range []string{
		`spec: {containers: [{$patch: merge}, {name: build, image: x}]}`,
	} {
		patch, err := yaml.YAMLToJSON([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		_, err = strategicMerge(orig, patch, reflect.TypeFor[corev1.Pod]())
		if !errors.Is(err, errUnsupportedDirective) {
			t.Errorf("%s: error %v; want %v", p, err, errUnsupportedDirective)
		}
	}
}

// The merge compared with apimachinery's on patches the fuzzer derives
// from the corpus.
func FuzzStrategicMergeMatchesAPIMachinery(f *testing.F) {
	for _, p := range diffCorpus {
		patch, err := yaml.YAMLToJSON([]byte(p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(patch)
	}
	orig := diffBasePod(f)
	f.Fuzz(func(t *testing.T, patch []byte) {
		diff, det := compareMerges(orig, patch)
		if det && diff != "" {
			t.Errorf("patch %s:\n%s", patch, diff)
		}
	})
}
