package actions

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-ci/tether/client/kube"
)

// Docker's rules, as the runner's docker run applies them: an entry point
// replaces ENTRYPOINT and drops CMD (the image is not read); without one,
// the step's args replace CMD; without args CMD stays.
func TestStepArgv(t *testing.T) {
	img := imageCommand{Entrypoint: []string{"/bin/tool", "--flag"}, Cmd: []string{"default", "cmd"}}
	read := func() (imageCommand, error) { return img, nil }
	unread := func() (imageCommand, error) {
		t.Fatal("the image was read for a step with an entry point")
		return imageCommand{}, nil
	}
	for _, tc := range []struct {
		entry string
		args  []string
		image func() (imageCommand, error)
		want  []string
	}{
		{"sh", []string{"-c", "echo hi"}, unread, []string{"sh", "-c", "echo hi"}},
		{"sh", nil, unread, []string{"sh"}},
		{"", []string{"a", "b c"}, read, []string{"/bin/tool", "--flag", "a", "b c"}},
		{"", nil, read, []string{"/bin/tool", "--flag", "default", "cmd"}},
		{"", nil, func() (imageCommand, error) { return imageCommand{Cmd: []string{"sh"}}, nil }, []string{"sh"}},
		{"", []string{"echo", "x"}, func() (imageCommand, error) { return imageCommand{Cmd: []string{"sh"}}, nil }, []string{"echo", "x"}},
	} {
		got, err := stepArgv(tc.entry, tc.args, tc.image)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("stepArgv(%q, %q) = %q, %v; want %q", tc.entry, tc.args, got, err, tc.want)
		}
	}
	if _, err := stepArgv("", nil, func() (imageCommand, error) { return imageCommand{}, nil }); err == nil || !strings.Contains(err.Error(), "neither ENTRYPOINT nor CMD") {
		t.Errorf("an image with nothing to run: %v", err)
	}
	if _, err := stepArgv("", nil, func() (imageCommand, error) { return imageCommand{}, errors.New("no route") }); err == nil ||
		!strings.Contains(err.Error(), "no route") || !strings.Contains(err.Error(), "runs.entrypoint") {
		t.Errorf("an unreadable image: %v", err)
	}
}

// The image's ENTRYPOINT and CMD come from a real registry (go-containerregistry's,
// in process, on 127.0.0.1 over plain HTTP as the container runtime
// reaches a loopback registry).
func TestReadImageCommand(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Entrypoint = []string{"/entry.sh", "two words"}
	cf.Config.Cmd = []string{"--default"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/org/action:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := readImageCommand(ctx, ref.String(), []byte(`{"auths":{"other.example.com":{"auth":"dTpw"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (imageCommand{Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := readImageCommand(ctx, host+"/org/missing:v1", nil); err == nil || !strings.Contains(err.Error(), host) {
		t.Fatalf("a missing image: %v", err)
	}
}

// Credentials are found by the registry's host, Docker Hub's names alike;
// other registries are read anonymously.
func TestDockerAuths(t *testing.T) {
	keys, err := parseAuths([]byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"aHViOnNlY3JldA=="},"ghcr.io":{"username":"u","password":"p"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		image      string
		user, pass string
	}{
		{"busybox", "hub", "secret"},
		{"docker.io/library/busybox", "hub", "secret"},
		{"ghcr.io/o/a:v1", "u", "p"},
		{"quay.io/o/a", "", ""},
	} {
		ref, err := parseImageRef(tc.image)
		if err != nil {
			t.Fatal(err)
		}
		c := keys.lookup(ref.registry)
		if tc.user == "" && c != nil || tc.user != "" && (c == nil || c.user != tc.user || c.pass != tc.pass) {
			t.Errorf("%s: %+v", tc.image, c)
		}
	}
	if _, err := parseAuths([]byte("{")); err == nil {
		t.Error("broken JSON accepted")
	}
}

// The step's shim: the job container's arguments with a spool of its own,
// an absolute deadline and TTL start (the job container's count from its
// own start), no TTY, no shared activity file and the hook's reconnect
// budget as its idle timeout (a shim its hook never reaches ends); the
// mounts under /tether without the scripts.
func TestShimOfPod(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: kube.BuildContainer, Command: []string{kube.ShimPath},
			Args: []string{"--spool-dir=" + kube.SpoolDir, "--deadline=3600", "--idle-timeout=30m0s", "--activity-file=" + kube.ActivityFile, "--tty"},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "tether", MountPath: "/tether"}, {Name: "tether-shim", MountPath: "/tether/bin", ReadOnly: true},
				{Name: "scripts", MountPath: kube.ScriptsDir}, {Name: workVolume, MountPath: WorkDir},
			},
		}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: kube.BuildContainer,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}}}}},
	}
	s, err := shimOfPod(p, "step-2", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--spool-dir=" + kube.SpoolDir + "-step-2", "--deadline=2026-01-02T04:04:05Z", "--created=2026-01-02T03:04:05Z", "--idle-timeout=2m0s"}
	if !reflect.DeepEqual(s.args, want) {
		t.Fatalf("args %q, want %q", s.args, want)
	}
	if len(s.mounts) != 2 || s.mounts[0].MountPath != "/tether" || s.mounts[1].MountPath != "/tether/bin" {
		t.Fatalf("mounts %+v", s.mounts)
	}
	p.Spec.Containers[0].Command = []string{"sleep"}
	if _, err := shimOfPod(p, "step-2", time.Minute); err == nil {
		t.Fatal("a pod without the shim was accepted")
	}
}
