package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ktesting "k8s.io/client-go/testing"

	"github.com/tether-ci/tether/client/kube/kubeapi/clientset"
)

// restrictedViolations checks pod against the Pod Security Standard
// "restricted" (v1.34, which includes "baseline"), written out from
// https://kubernetes.io/docs/concepts/security/pod-security-standards/
// independently of security.go (k8s.io/pod-security-admission is not in
// the module graph). The e2e test TestKubeRestrictedNamespace has the real
// admission plugin judge the same pods.
func restrictedViolations(pod *corev1.Pod) []string {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	ps := pod.Spec
	psc := ps.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	// baseline: host namespaces, hostPath, hostPorts, sysctls, profiles.
	if ps.HostNetwork || ps.HostPID || ps.HostIPC {
		add("host namespaces")
	}
	safeSysctls := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
		"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
		"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
	for _, s := range psc.Sysctls {
		if !slices.Contains(safeSysctls, s.Name) {
			add("unsafe sysctl %s", s.Name)
		}
	}
	// restricted: volume types.
	for _, v := range ps.Volumes {
		vs := v.VolumeSource
		if vs.ConfigMap == nil && vs.CSI == nil && vs.DownwardAPI == nil && vs.EmptyDir == nil && vs.Ephemeral == nil &&
			vs.PersistentVolumeClaim == nil && vs.Projected == nil && vs.Secret == nil {
			add("volume %s has a forbidden type", v.Name)
		}
	}
	podSeccompOK := false
	if p := psc.SeccompProfile; p != nil {
		switch p.Type {
		case corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeLocalhost:
			podSeccompOK = true
		default:
			add("pod seccompProfile %s", p.Type)
		}
	}
	if psc.RunAsNonRoot != nil && !*psc.RunAsNonRoot {
		add("pod runAsNonRoot=false")
	}
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		add("pod runAsUser=0")
	}
	if p := psc.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
		add("pod appArmor Unconfined")
	}
	if o := psc.SELinuxOptions; o != nil && (o.User != "" || o.Role != "" ||
		!slices.Contains([]string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}, o.Type)) {
		add("pod seLinuxOptions %+v", *o)
	}
	if w := psc.WindowsOptions; w != nil && w.HostProcess != nil && *w.HostProcess {
		add("pod hostProcess")
	}
	for _, c := range slices.Concat(ps.InitContainers, ps.Containers) {
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if sc.Privileged != nil && *sc.Privileged {
			add("%s: privileged", c.Name)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				add("%s: hostPort %d", c.Name, p.HostPort)
			}
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			add("%s: allowPrivilegeEscalation is not false", c.Name)
		}
		if sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot {
			add("%s: runAsNonRoot=false", c.Name)
		} else if sc.RunAsNonRoot == nil && (psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot) {
			add("%s: runAsNonRoot not true (pod or container)", c.Name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			add("%s: runAsUser=0", c.Name)
		}
		switch p := sc.SeccompProfile; {
		case p == nil && !podSeccompOK:
			add("%s: no seccompProfile (pod or container)", c.Name)
		case p != nil && p.Type != corev1.SeccompProfileTypeRuntimeDefault && p.Type != corev1.SeccompProfileTypeLocalhost:
			add("%s: seccompProfile %s", c.Name, p.Type)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			add("%s: capabilities do not drop ALL", c.Name)
		}
		if sc.Capabilities != nil {
			for _, a := range sc.Capabilities.Add {
				if a != "NET_BIND_SERVICE" {
					add("%s: adds capability %s", c.Name, a)
				}
			}
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			add("%s: procMount %s", c.Name, *sc.ProcMount)
		}
		if p := sc.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
			add("%s: appArmor Unconfined", c.Name)
		}
		if o := sc.SELinuxOptions; o != nil && (o.User != "" || o.Role != "") {
			add("%s: seLinuxOptions user/role", c.Name)
		}
		if w := sc.WindowsOptions; w != nil && w.HostProcess != nil && *w.HostProcess {
			add("%s: hostProcess", c.Name)
		}
	}
	return bad
}

// restrictedSpec is testSpec with Spec.Restricted.
func restrictedSpec() Spec {
	s := testSpec()
	s.Restricted = true
	return s
}

// mountsOf returns the container's mounts, mount path → volume name.
func mountsOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, vm := range c.VolumeMounts {
		m[vm.MountPath] = vm.Name
	}
	return m
}

// volumeNamed returns the pod's volume called name, or nil.
func volumeNamed(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// hasTmpEmptyDir reports whether the build container mounts an emptyDir at /tmp.
func hasTmpEmptyDir(pod *corev1.Pod) bool {
	name, ok := mountsOf(pod.Spec.Containers[0])[TmpDir]
	if !ok {
		return false
	}
	v := volumeNamed(pod, name)
	return v != nil && v.EmptyDir != nil
}

// buildRestricted builds spec's pod and fails the test unless it passes the
// restricted profile.
func buildRestricted(t *testing.T, spec Spec) *corev1.Pod {
	t.Helper()
	objs, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if bad := restrictedViolations(objs.Pod); len(bad) > 0 {
		t.Fatalf("the pod violates the restricted profile:\n%s", strings.Join(bad, "\n"))
	}
	return objs.Pod
}

func TestRestrictedPodPassesProfile(t *testing.T) {
	pod := buildRestricted(t, restrictedSpec())
	sc := pod.Spec.Containers[0].SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != RestrictedUID || RestrictedUID != 65532 {
		t.Errorf("build container runAsUser %v, want %d", sc.RunAsUser, RestrictedUID)
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("build container runAsNonRoot %v, want true", sc.RunAsNonRoot)
	}
	if !readOnlyRoot(sc) {
		t.Errorf("build container readOnlyRootFilesystem %v, want true", sc.ReadOnlyRootFilesystem)
	}
	if p := pod.Spec.SecurityContext.SeccompProfile; p == nil || p.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccompProfile %v, want RuntimeDefault", p)
	}
	if !hasTmpEmptyDir(pod) {
		t.Errorf("no emptyDir at /tmp under a read-only root: mounts %v", mountsOf(pod.Spec.Containers[0]))
	}
	// The Tether mounts are still there and the scripts stay executable.
	m := mountsOf(pod.Spec.Containers[0])
	if m["/tether"] != "tether" || m[ScriptsDir] != "scripts" || m[PodInfoDir] != "podinfo" {
		t.Errorf("build container mounts %v", m)
	}
}

// TestPlainPodFailsProfile shows restrictedViolations can fail: without
// Restricted the build container breaks the profile (a restricted namespace
// rejects the pod), while the init container passes it all the same.
func TestPlainPodFailsProfile(t *testing.T) {
	objs, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	bad := strings.Join(restrictedViolations(pod), "\n")
	for _, want := range []string{
		"build: allowPrivilegeEscalation is not false",
		"build: runAsNonRoot not true",
		"build: capabilities do not drop ALL",
		"build: no seccompProfile",
		InitContainer + ": no seccompProfile", // the pod-level profile is Restricted's
	} {
		if !strings.Contains(bad, want) {
			t.Errorf("violations lack %q:\n%s", want, bad)
		}
	}
	for _, wrong := range []string{InitContainer + ": allow", InitContainer + ": runAs", InitContainer + ": cap"} {
		if strings.Contains(bad, wrong) {
			t.Errorf("the init container is not hardened (%q):\n%s", wrong, bad)
		}
	}
	// Without Restricted nothing changes for the build container.
	if pod.Spec.SecurityContext != nil || pod.Spec.Containers[0].SecurityContext != nil {
		t.Errorf("security contexts without Restricted: pod %+v, build %+v", pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext)
	}
	if hasTmpEmptyDir(pod) || volumeNamed(pod, "tmp") != nil {
		t.Error("an emptyDir at /tmp without a read-only root")
	}
}

func TestRestrictedCallerSettingsWin(t *testing.T) {
	t.Run("pod user", func(t *testing.T) {
		s := restrictedSpec()
		s.PodSecurityContext = &corev1.PodSecurityContext{
			RunAsUser:      new(int64(1000)),
			RunAsGroup:     new(int64(3000)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: new("ci.json")},
		}
		s.SecurityContext = &corev1.SecurityContext{
			ReadOnlyRootFilesystem: new(false),
			Capabilities:           &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}},
		}
		pod := buildRestricted(t, s)
		psc, sc := pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext
		if *psc.RunAsUser != 1000 || *psc.RunAsGroup != 3000 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost {
			t.Errorf("pod security context %+v: the caller's settings are lost", psc)
		}
		if sc.RunAsUser != nil {
			t.Errorf("build runAsUser %d set though the pod sets one", *sc.RunAsUser)
		}
		if ic := pod.Spec.InitContainers[0].SecurityContext; ic.RunAsUser != nil {
			t.Errorf("init runAsUser %d set though the pod sets one (inherit it)", *ic.RunAsUser)
		}
		if readOnlyRoot(sc) || hasTmpEmptyDir(pod) {
			t.Errorf("readOnlyRootFilesystem=false was overridden (or /tmp mounted)")
		}
		if !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}) || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("capabilities %+v, want add NET_BIND_SERVICE, drop ALL", sc.Capabilities)
		}
		// The caller's structs are not modified.
		if s.SecurityContext.Capabilities.Drop != nil || s.SecurityContext.RunAsNonRoot != nil || s.PodSecurityContext.RunAsNonRoot != nil {
			t.Errorf("Build modified the caller's security contexts: %+v", s.SecurityContext)
		}
	})
	t.Run("container user", func(t *testing.T) {
		s := restrictedSpec()
		s.SecurityContext = &corev1.SecurityContext{RunAsUser: new(int64(4242))}
		s.PodSecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: new(true)}
		pod := buildRestricted(t, s)
		sc := pod.Spec.Containers[0].SecurityContext
		if *sc.RunAsUser != 4242 {
			t.Errorf("build runAsUser %d, want the caller's 4242", *sc.RunAsUser)
		}
		if sc.RunAsNonRoot != nil {
			t.Errorf("build runAsNonRoot set though the pod sets it")
		}
		if ic := pod.Spec.InitContainers[0].SecurityContext; ic.RunAsUser == nil || *ic.RunAsUser != RestrictedUID {
			t.Errorf("init runAsUser %v, want %d (the pod sets none)", ic.RunAsUser, RestrictedUID)
		}
	})
}

func TestRestrictedConflicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.PodSecurityContext
		ctr  *corev1.SecurityContext
		want string
	}{
		{"privileged", nil, &corev1.SecurityContext{Privileged: new(true)}, "Privileged=true"},
		{"escalation", nil, &corev1.SecurityContext{AllowPrivilegeEscalation: new(true)}, "AllowPrivilegeEscalation=true"},
		{"root user", nil, &corev1.SecurityContext{RunAsUser: new(int64(0))}, "SecurityContext.RunAsUser=0"},
		{"root pod user", &corev1.PodSecurityContext{RunAsUser: new(int64(0))}, nil, "PodSecurityContext.RunAsUser=0"},
		{"pod runAsNonRoot false", &corev1.PodSecurityContext{RunAsNonRoot: new(false)}, &corev1.SecurityContext{RunAsNonRoot: new(true)}, "PodSecurityContext.RunAsNonRoot=false"},
		{"runAsNonRoot false", nil, &corev1.SecurityContext{RunAsNonRoot: new(false)}, "SecurityContext.RunAsNonRoot=false"},
		{"add SYS_ADMIN", nil, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}, "Add SYS_ADMIN"},
		{"drop only NET_RAW", nil, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}, "dropping ALL"},
		{"unconfined seccomp", &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}, nil, "SeccompProfile Unconfined"},
		{"unmasked proc", nil, &corev1.SecurityContext{ProcMount: new(corev1.UnmaskedProcMount)}, "ProcMount=Unmasked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := restrictedSpec()
			s.PodSecurityContext, s.SecurityContext = tc.pod, tc.ctr
			_, err := Build(s)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Restricted") {
				t.Fatalf("Build: %v; want an error naming Restricted and %q", err, tc.want)
			}
			// The same settings without Restricted are the caller's business.
			s.Restricted = false
			if _, err := Build(s); err != nil {
				t.Fatalf("without Restricted: %v", err)
			}
		})
	}
	t.Run("all at once", func(t *testing.T) {
		s := restrictedSpec()
		s.SecurityContext = &corev1.SecurityContext{Privileged: new(true), AllowPrivilegeEscalation: new(true)}
		_, err := Build(s)
		if err == nil || !strings.Contains(err.Error(), "Privileged=true") || !strings.Contains(err.Error(), "AllowPrivilegeEscalation=true") {
			t.Fatalf("Build: %v; want both conflicts named", err)
		}
	})
}

func TestSecurityInvalidUser(t *testing.T) {
	for _, uid := range []int64{-1, 1 << 31} {
		for _, restricted := range []bool{false, true} {
			s := testSpec()
			s.Restricted = restricted
			s.SecurityContext = &corev1.SecurityContext{RunAsUser: new(uid)}
			if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "user ID") {
				t.Errorf("runAsUser %d (restricted %v): %v; want a user ID error", uid, restricted, err)
			}
			s.SecurityContext = nil
			s.PodSecurityContext = &corev1.PodSecurityContext{RunAsUser: new(uid)}
			if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "user ID") {
				t.Errorf("pod runAsUser %d (restricted %v): %v; want a user ID error", uid, restricted, err)
			}
		}
	}
}

func TestInitContainerAlwaysHardened(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restr   bool
		pod     *corev1.PodSecurityContext
		wantUID *int64 // nil: inherited from the pod
	}{
		{"plain", false, nil, new(RestrictedUID)},
		{"restricted", true, nil, new(RestrictedUID)},
		{"pod user", false, &corev1.PodSecurityContext{RunAsUser: new(int64(1234))}, nil},
		{"restricted pod user", true, &corev1.PodSecurityContext{RunAsUser: new(int64(1234))}, nil},
		{"pod root", false, &corev1.PodSecurityContext{RunAsUser: new(int64(0))}, new(RestrictedUID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			s.Restricted, s.PodSecurityContext = tc.restr, tc.pod
			objs, err := Build(s)
			if err != nil {
				t.Fatal(err)
			}
			ic := objs.Pod.Spec.InitContainers[0]
			sc := ic.SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
				!readOnlyRoot(sc) || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || (sc.Privileged != nil && *sc.Privileged) {
				t.Fatalf("init container security context %+v", sc)
			}
			switch {
			case tc.wantUID == nil && sc.RunAsUser != nil:
				t.Errorf("init runAsUser %d, want it inherited from the pod", *sc.RunAsUser)
			case tc.wantUID != nil && (sc.RunAsUser == nil || *sc.RunAsUser != *tc.wantUID):
				t.Errorf("init runAsUser %v, want %d", sc.RunAsUser, *tc.wantUID)
			}
			// It copies the shim into the emptyDir only: no other mount
			// needs to be writable.
			if len(ic.VolumeMounts) != 1 || ic.VolumeMounts[0].MountPath != InitMountPath {
				t.Errorf("init mounts %+v", ic.VolumeMounts)
			}
		})
	}
}

// TestReadOnlyRootAlone: a read-only root without Restricted gets /tmp and
// nothing else.
func TestReadOnlyRootAlone(t *testing.T) {
	s := testSpec()
	s.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: new(true)}
	objs, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	if !hasTmpEmptyDir(pod) {
		t.Fatalf("no emptyDir at /tmp: mounts %v", mountsOf(pod.Spec.Containers[0]))
	}
	sc := pod.Spec.Containers[0].SecurityContext
	if sc.RunAsUser != nil || sc.AllowPrivilegeEscalation != nil || sc.Capabilities != nil || sc.RunAsNonRoot != nil || pod.Spec.SecurityContext != nil {
		t.Errorf("a read-only root alone changed more: pod %+v, build %+v", pod.Spec.SecurityContext, sc)
	}
}

// TestCreatePodSecurityHint: a pod that Pod Security admission rejects
// gets advice to use Restricted, not the ResourceQuota/RBAC one.
func TestCreatePodSecurityHint(t *testing.T) {
	cs := fakeCluster()
	// The apiserver's message for such a rejection (v1.34).
	msg := `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "build" must set securityContext.allowPrivilegeEscalation=false)`
	cs.PrependReactor("create", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "p", errors.New(msg))
	})
	objs, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Create(context.Background(), clientset.Wrap(cs), objs, nil)
	if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "--restricted") || strings.Contains(err.Error(), "ResourceQuota") {
		t.Fatalf("Create: %v; want the admission message and the --restricted advice", err)
	}
}
