package settings_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/settings"
)

// A runner takes the pod settings from its command line and a config file
// (same key names as the flags; the command line wins), with a setting of
// its own beside them, and turns them into the pod's spec for client/kube.
func Example() {
	var pod settings.Pod
	fs := pflag.NewFlagSet("my-runner", pflag.ContinueOnError)
	pod.AddFlags(fs)
	image := fs.String("image", "", "the build image") // the runner's own: the file covers it too

	dir, err := os.MkdirTemp("", "settings-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "runner.yaml")
	body := "image: alpine:3\nmemory: 1Gi\ntoleration: [gpu:NoSchedule]\nnode-selector: {pool: gpu}\n"
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		panic(err)
	}

	args := []string{"--config", config, "--memory", "2Gi", "--volume", "emptydir:/work"}
	if err := fs.Parse(args); err != nil {
		panic(err)
	}
	if err := pod.Complete(fs); err != nil { // the file fills in what the command line left unset
		panic(err)
	}
	if err := pod.Validate(); err != nil {
		panic(err)
	}
	spec := kube.Spec{Namespace: "ci", Image: *image, Serve: true}
	if err := pod.ApplyTo(&spec); err != nil {
		panic(err)
	}
	fmt.Println("image:", spec.Image)
	fmt.Println("memory:", spec.Resources.Limits.Memory())
	fmt.Println("node selector:", spec.NodeSelector)
	fmt.Println("toleration:", spec.Tolerations[0].Key, spec.Tolerations[0].Effect)
	fmt.Println("mount:", spec.VolumeMounts[0].MountPath)
	// Output:
	// image: alpine:3
	// memory: 2Gi
	// node selector: map[pool:gpu]
	// toleration: gpu NoSchedule
	// mount: /work
}

// Settings filled in Go are checked with the messages the flags give.
func ExamplePod_Validate() {
	pod := settings.Pod{
		Resources:   settings.Resources{CPU: "2", Limits: "cpu=1"},
		Tolerations: []string{"dedicated=ci:NoSchedule"},
	}
	fmt.Println(pod.Validate())
	// Output: the cpu request 2 is more than its limit 1 (--cpu/--memory, --requests, --limits)
}

// A pod that passes the Pod Security Standard "restricted" as user 1000.
func ExampleSecurity() {
	uid := int64(1000)
	sec := settings.Security{Restricted: true, RunAsUser: &uid}
	if err := sec.Validate(); err != nil {
		panic(err)
	}
	var spec kube.Spec
	sec.ApplyTo(&spec)
	fmt.Println(spec.Restricted, *spec.SecurityContext.RunAsUser)
	// Output: true 1000
}
