package main

import (
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/runcmd"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/cmdutil"
)

// TestRunSecurityFlagsBadInput: bad or contradictory pod security flags
// exit 2 with a message naming the problem, before any cluster is needed.
func TestRunSecurityFlagsBadInput(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "a.sh", "echo hi\n")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"negative uid":        {[]string{"--image", "x", "--run-as-user", "-1"}, "not a user ID"},
		"uid too big":         {[]string{"--image", "x", "--run-as-user", "2147483648"}, "not a user ID"},
		"uid not a number":    {[]string{"--image", "x", "--run-as-user", "nobody"}, "not a user ID"},
		"root and restricted": {[]string{"--image", "x", "--restricted", "--run-as-user", "0"}, "contradicts --restricted"},
		"restricted local":    {[]string{"--local", "--restricted"}, "Kubernetes pods only"},
		"read-only docker":    {[]string{"--docker", "--image", "x", "--read-only-root"}, "Kubernetes pods only"},
		"uid local":           {[]string{"--local", "--run-as-user", "1000"}, "Kubernetes pods only"},
		"read-only not bool":  {[]string{"--image", "x", "--read-only-root=maybe"}, "not true or false"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append(append([]string{"run"}, tc.args...), "a.sh")
			stdout, stderr, code := tether(t, dir, args...)
			if code != 2 || len(stdout) != 0 || !strings.Contains(string(stderr), tc.want) {
				t.Fatalf("code %d stdout %q stderr %q; want 2 and %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// specFor parses `tether run` args (Kubernetes backend), validates them and
// builds the pod the way runKube does.
func specFor(t *testing.T, args ...string) *kube.Objects {
	t.Helper()
	dir := t.TempDir()
	script := writeScript(t, dir, "a.sh", "echo hi\n")
	var f runcmd.Flags
	pos, err := cmdutil.ParseArgs(runcmd.NewFlagSet(&f), append(append([]string{"--image", "busybox"}, args...), script))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(pos); err != nil {
		t.Fatal(err)
	}
	spec := kube.Spec{Namespace: "ci", Image: f.Image, Scripts: []kube.Script{{Name: "a.sh", Content: []byte("echo hi\n")}}}
	f.Security.ApplyTo(&spec)
	objs, err := kube.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestRunSecurityFlagsReachThePod: each flag ends up in the pod.
func TestRunSecurityFlagsReachThePod(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		pod := specFor(t).Pod
		if pod.Spec.SecurityContext != nil || pod.Spec.Containers[0].SecurityContext != nil {
			t.Fatalf("security contexts without flags: %+v %+v", pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext)
		}
	})
	t.Run("restricted", func(t *testing.T) {
		pod := specFor(t, "--restricted").Pod
		sc := pod.Spec.Containers[0].SecurityContext
		if sc == nil || *sc.RunAsUser != kube.RestrictedUID || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
			!*sc.RunAsNonRoot || pod.Spec.SecurityContext.SeccompProfile == nil {
			t.Fatalf("--restricted: pod %+v, build %+v", pod.Spec.SecurityContext, sc)
		}
	})
	t.Run("restricted user writable root", func(t *testing.T) {
		pod := specFor(t, "--restricted", "--run-as-user", "1234", "--read-only-root=false").Pod
		sc := pod.Spec.Containers[0].SecurityContext
		if *sc.RunAsUser != 1234 || *sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot {
			t.Fatalf("--restricted --run-as-user 1234 --read-only-root=false: build %+v", sc)
		}
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			if m.MountPath == kube.TmpDir {
				t.Fatal("an emptyDir at /tmp with a writable root")
			}
		}
	})
	t.Run("read-only root alone", func(t *testing.T) {
		pod := specFor(t, "--read-only-root").Pod
		sc := pod.Spec.Containers[0].SecurityContext
		if sc == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsUser != nil || sc.AllowPrivilegeEscalation != nil {
			t.Fatalf("--read-only-root: build %+v", sc)
		}
		tmp := false
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			tmp = tmp || m.MountPath == kube.TmpDir
		}
		if !tmp {
			t.Fatal("no emptyDir at /tmp under --read-only-root")
		}
	})
	t.Run("user alone", func(t *testing.T) {
		pod := specFor(t, "--run-as-user", "0").Pod
		sc := pod.Spec.Containers[0].SecurityContext
		if sc == nil || *sc.RunAsUser != 0 || sc.ReadOnlyRootFilesystem != nil || sc.RunAsNonRoot != nil {
			t.Fatalf("--run-as-user 0: build %+v", sc)
		}
	})
}
