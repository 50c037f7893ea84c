package kube

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// imageSpec is testSpec with the shim from an image volume, a helper
// container, a service and init container resources: every container the
// shim's source touches.
func imageSpec() Spec {
	s := testSpec()
	s.Name = "tether-img"
	s.HelperImage = "localhost/tether/tether-shim:dev"
	s.PullPolicy = corev1.PullNever
	s.ShimFrom = ShimFromImage
	s.Helper = &Helper{Image: "localhost/tether/git:dev"}
	s.Services = []Service{{Name: "db", Image: "localhost/tether/busybox:dev"}}
	s.InitResources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
	return s
}

func TestBuildShimFromImage(t *testing.T) {
	objs, err := Build(imageSpec())
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	if c := container(pod.Spec.InitContainers, InitContainer); c != nil {
		t.Fatalf("init container %s in a pod whose shim comes from an image volume", InitContainer)
	}
	src, ok := shimImage(pod)
	if !ok || src.Reference != "localhost/tether/tether-shim:dev" || src.PullPolicy != corev1.PullNever {
		t.Fatalf("shim image volume %+v (found %v); want the helper image, pull policy Never", src, ok)
	}
	want := corev1.VolumeMount{Name: shimVolume, MountPath: "/tether/bin", ReadOnly: true}
	for _, c := range []*corev1.Container{&pod.Spec.Containers[0], container(pod.Spec.InitContainers, HelperContainer)} {
		if c == nil || !slicesContain(c.VolumeMounts, want) || c.Command[0] != ShimPath {
			t.Errorf("container %+v: want the shim's image volume at %s and %s as its command", c, want.MountPath, ShimPath)
		}
	}
	if ShimPath != want.MountPath+"/tether-shim" {
		t.Errorf("ShimPath %s is not tether-shim in the image volume's mount %s", ShimPath, want.MountPath)
	}

	// The fallback is exactly the pod ShimFromInit builds.
	init := imageSpec()
	init.ShimFrom = ShimFromInit
	plain, err := Build(init)
	if err != nil {
		t.Fatal(err)
	}
	if objs.Fallback == nil || !apiequality.Semantic.DeepEqual(objs.Fallback, plain.Pod) {
		t.Fatalf("Fallback differs from the ShimFromInit pod:\n%+v\n%+v", objs.Fallback, plain.Pod)
	}
	if plain.Fallback != nil {
		t.Errorf("a ShimFromInit pod has a Fallback")
	}
	if c := plain.Pod.Spec.InitContainers[0]; c.Name != InitContainer || c.Resources.Limits.Memory().String() != "64Mi" {
		t.Errorf("first init container %s with limits %v; want %s with the InitResources", c.Name, c.Resources.Limits, InitContainer)
	}

	bad := testSpec()
	bad.ShimFrom = "volume"
	if _, err := Build(bad); err == nil || !strings.Contains(err.Error(), "ShimFrom") {
		t.Errorf("Build with ShimFrom %q: %v; want an error naming ShimFrom", bad.ShimFrom, err)
	}
}

func slicesContain(ms []corev1.VolumeMount, m corev1.VolumeMount) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// serveDryRuns makes cs answer a dry run of a pod create as an API server
// does, storing nothing, and, with drop, behave like an API server without
// image volumes, as Kubernetes 1.34 with the ImageVolume feature gate off
// does (checked on a real one): it takes the pod but drops its image
// volumes and the mounts that name them, dry run or not. It returns the
// pods the server was asked to create, dry runs included.
func serveDryRuns(cs interface {
	PrependReactor(verb, resource string, fn ktesting.ReactionFunc)
}, drop bool) *[]*corev1.Pod {
	var asked []*corev1.Pod
	cs.PrependReactor("create", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		pod := a.(ktesting.CreateAction).GetObject().(*corev1.Pod)
		asked = append(asked, pod.DeepCopy())
		dry := len(a.(ktesting.CreateActionImpl).CreateOptions.DryRun) > 0
		if !drop {
			return dry, pod, nil
		}
		var vols []corev1.Volume
		for _, v := range pod.Spec.Volumes {
			if v.Image == nil {
				vols = append(vols, v)
			}
		}
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				var ms []corev1.VolumeMount
				for _, m := range list[i].VolumeMounts {
					if m.Name != shimVolume {
						ms = append(ms, m)
					}
				}
				list[i].VolumeMounts = ms
			}
		}
		pod.Spec.Volumes = vols
		return dry, pod, nil
	})
	return &asked
}

func TestCreateShimFromImage(t *testing.T) {
	ctx := context.Background()
	t.Run("the API server keeps image volumes", func(t *testing.T) {
		cs := fakeCluster()
		asked := serveDryRuns(cs, false)
		objs, err := Build(imageSpec())
		if err != nil {
			t.Fatal(err)
		}
		p, err := Create(ctx, clientset.Wrap(cs), objs, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := shimImage(got); !ok || container(got.Spec.InitContainers, InitContainer) != nil {
			t.Errorf("created pod %+v; want the image volume, no init container", got.Spec)
		}
		if len(*asked) != 2 {
			t.Errorf("%d pod creates; want a dry run, then the pod", len(*asked))
		}
	})
	t.Run("the API server drops them", func(t *testing.T) {
		cs := fakeCluster()
		asked := serveDryRuns(cs, true)
		objs, err := Build(imageSpec())
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		p, err := Create(ctx, clientset.Wrap(cs), objs, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if container(got.Spec.InitContainers, InitContainer) == nil {
			t.Errorf("created pod without the init container: %+v", got.Spec.InitContainers)
		}
		if len(*asked) != 2 || !apiequality.Semantic.DeepEqual((*asked)[1], objs.Fallback) {
			t.Errorf("%d pod creates; want a dry run of the image pod, then the fallback", len(*asked))
		}
		if !strings.Contains(logs.String(), "drops image volumes") {
			t.Errorf("log %q; want a line saying the init container is used instead", logs.String())
		}
	})
	t.Run("a ShimFromInit pod is created without a dry run", func(t *testing.T) {
		cs := fakeCluster()
		asked := serveDryRuns(cs, true)
		objs, err := Build(testSpec())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Create(ctx, clientset.Wrap(cs), objs, nil); err != nil {
			t.Fatal(err)
		}
		if len(*asked) != 1 {
			t.Errorf("%d pod creates; want 1", len(*asked))
		}
	})
}
