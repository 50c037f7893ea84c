package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client/kube"
)

// matches reports whether err's message is want, or starts with want's
// text before a trailing "…" (the rest is Kubernetes' own validation
// text, which names the rule broken).
func matches(err error, want string) bool {
	if err == nil {
		return false
	}
	if prefix, ok := strings.CutSuffix(want, "…"); ok {
		return strings.HasPrefix(err.Error(), prefix) && len(err.Error()) > len(prefix)
	}
	return err.Error() == want
}

// Every message of Pod.Validate, in full: what users of tether run and
// tether gitlab see, naming the flag (the config file key) at fault.
func TestPodValidateMessages(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.yaml")
	for _, tc := range []struct {
		p    Pod
		want string
	}{
		{Pod{ScheduleTimeout: -time.Second}, "--schedule-timeout -1s must not be negative (0 takes the default, 2m0s)"},
		{Pod{ShimFrom: "volume"}, `--shim-from "volume": want init or image`},
		{Pod{Resources: Resources{CPU: "lots"}}, `--cpu "lots" is not a quantity (e.g. 500m, 2, 512Mi): quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`},
		{Pod{Resources: Resources{Memory: "1Q"}}, `--memory "1Q" is not a quantity (e.g. 500m, 2, 512Mi): quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`},
		{Pod{Resources: Resources{Requests: "cpu"}}, `--requests "cpu": want NAME=QUANTITY[,NAME=QUANTITY…] (e.g. cpu=500m,memory=1Gi)`},
		{Pod{Resources: Resources{Limits: "=1"}}, `--limits "=1": want NAME=QUANTITY[,NAME=QUANTITY…] (e.g. cpu=500m,memory=1Gi)`},
		{Pod{Resources: Resources{Limits: "memory=x"}}, `--limits: memory="x" is not a quantity: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`},
		{Pod{Resources: Resources{CPU: "2", Limits: "cpu=1"}}, "the cpu request 2 is more than its limit 1 (--cpu/--memory, --requests, --limits)"},
		{Pod{Resources: Resources{Requests: "memory=2Gi", Limits: "memory=1Gi"}}, "the memory request 2Gi is more than its limit 1Gi (--cpu/--memory, --requests, --limits)"},
		{Pod{ServiceResources: Resources{CPU: "x"}, Services: StringList{"redis"}}, `--service-cpu "x" is not a quantity (e.g. 500m, 2, 512Mi): …`},
		{Pod{ServiceResources: Resources{Memory: "2Gi", Limits: "memory=1Gi"}}, "the memory request 2Gi is more than its limit 1Gi (--service-cpu/--service-memory, --service-requests, --service-limits)"},
		{Pod{NodeSelector: StringList{"pool"}}, `--node-selector "pool": want KEY=VALUE`},
		{Pod{NodeSelector: StringList{"=gpu"}}, `--node-selector "=gpu": want KEY=VALUE`},
		{Pod{NodeSelector: StringList{"bad key!=x"}}, `--node-selector "bad key!=x": key "bad key!": …`},
		{Pod{NodeSelector: StringList{"pool=not a value"}}, `--node-selector "pool=not a value": value "not a value" of pool: …`},
		{Pod{Labels: StringList{"=x"}}, `--label "=x": want KEY=VALUE`},
		{Pod{Labels: StringList{"team=-x-"}}, `--label "team=-x-": value "-x-" of team: …`},
		{Pod{Annotations: StringList{"note"}}, `--annotation "note": want KEY=VALUE`},
		{Pod{Annotations: StringList{"bad key=anything goes"}}, `--annotation "bad key=anything goes": key "bad key": …`},
		{Pod{Tolerations: StringList{"=v"}}, `--toleration "=v": want KEY[=VALUE][:EFFECT]`},
		{Pod{Tolerations: StringList{"k:Sometimes"}}, `--toleration "k:Sometimes": effect "Sometimes" is not NoSchedule, PreferNoSchedule or NoExecute`},
		{Pod{Tolerations: StringList{"bad key:NoSchedule"}}, `--toleration "bad key:NoSchedule": key "bad key": …`},
		{Pod{Tolerations: StringList{"gpu=not a value"}}, `--toleration "gpu=not a value": key "gpu": value "not a value": …`},
		{Pod{PullSecrets: StringList{"Reg_Cred"}}, `--pull-secret "Reg_Cred" is not a Kubernetes object name: …`},
		{Pod{ServiceAccount: "CI Runner"}, `--service-account "CI Runner" is not a Kubernetes object name: …`},
		{Pod{Services: StringList{"=db"}}, `--service "=db": want IMAGE[=ALIAS[,ALIAS…]]`},
		{Pod{Services: StringList{"redis=cache,Bad_Alias"}}, `--service "redis=cache,Bad_Alias": alias "Bad_Alias" is not a host name: …`},
		{Pod{Volumes: StringList{"nfs:server:/x"}}, `--volume "nfs:server:/x": want a kind of pvc, hostpath, emptydir, emptydir-memory, configmap or secret`},
		{Pod{Volumes: StringList{"emptydir:/a:/b"}}, `--volume "emptydir:/a:/b": want emptydir:PATH[:ro]`},
		{Pod{Volumes: StringList{"emptydir-memory"}}, `--volume "emptydir-memory": want emptydir-memory:PATH[:ro]`},
		{Pod{Volumes: StringList{"pvc:/x"}}, `--volume "pvc:/x": want pvc:SOURCE:PATH[:ro]`},
		{Pod{Volumes: StringList{"secret::/x"}}, `--volume "secret::/x": want secret:SOURCE:PATH[:ro]`},
		{Pod{Volumes: StringList{"hostpath:rel:/x"}}, `--volume "hostpath:rel:/x": want hostpath:/ABSOLUTE/HOST/PATH:PATH[:ro]`},
		{Pod{Volumes: StringList{"pvc:Cache_1:/cache"}}, `--volume pvc:Cache_1:/cache: pvc "Cache_1" is not a Kubernetes object name: …`},
		{Pod{Volumes: StringList{"configmap:my cfg:/etc/cfg"}}, `--volume configmap:my cfg:/etc/cfg: configmap "my cfg" is not a Kubernetes object name: …`},
		{Pod{Volumes: StringList{"secret:TLS:/tls:ro"}}, `--volume secret:TLS:/tls:ro: secret "TLS" is not a Kubernetes object name: …`},
		{Pod{Volumes: StringList{"emptydir:rel"}}, "--volume emptydir:rel: the mount path must be absolute"},
		{Pod{Volumes: StringList{"pvc:cache:rel:ro"}}, "--volume pvc:cache:rel:ro: the mount path must be absolute"},
		{Pod{PodPatchType: "merge"}, `--pod-patch-type "merge": want strategic or json`},
		{Pod{PodPatchType: "json"}, "--pod-patch-type needs --pod-patch FILE"},
		{Pod{PodPatch: missing}, "--pod-patch: open " + missing + ": no such file or directory"},
		// Filled in Go, where no flag checked them:
		{Pod{TerminationGrace: Grace(500 * time.Millisecond)}, "--termination-grace-period 500ms: want at least 1s (Kubernetes removes a pod with a grace of 0 before its containers stop)"},
		{Pod{TerminationGrace: Grace(1500 * time.Millisecond)}, "--termination-grace-period 1.5s: want whole seconds (Kubernetes counts the grace in seconds)"},
		{Pod{TerminationGrace: Grace(25 * time.Hour)}, "--termination-grace-period 25h0m0s: want at most 24h0m0s"},
	} {
		if err := tc.p.Validate(); !matches(err, tc.want) {
			t.Errorf("%+v:\n got %v\nwant %s", tc.p, err, tc.want)
		}
	}
}

// The flag values refuse bad input with the messages pflag wraps as
// `invalid argument "V" for "--FLAG" flag: …`.
func TestFlagValueMessages(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"termination-grace-period", "soon", "want whole seconds (30) or a duration (30s, 2m)"},
		{"termination-grace-period", "0", "want at least 1s (Kubernetes removes a pod with a grace of 0 before its containers stop)"},
		{"termination-grace-period", "-5", "want at least 1s (Kubernetes removes a pod with a grace of 0 before its containers stop)"},
		{"termination-grace-period", "500ms", "want at least 1s (Kubernetes removes a pod with a grace of 0 before its containers stop)"},
		{"termination-grace-period", "1.5s", "want whole seconds (Kubernetes counts the grace in seconds)"},
		{"termination-grace-period", "25h", "want at most 24h0m0s"},
		{"termination-grace-period", "99999999999999999", "want at most 24h0m0s"},
		{"run-as-user", "-1", `"-1" is not a user ID: want a number from 0 to 2147483647`},
		{"run-as-user", "2147483648", `"2147483648" is not a user ID: want a number from 0 to 2147483647`},
		{"run-as-user", "nobody", `"nobody" is not a user ID: want a number from 0 to 2147483647`},
		{"read-only-root", "maybe", `"maybe" is not true or false`},
	} {
		var p Pod
		var s Security
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		p.AddFlags(fs)
		s.AddFlags(fs)
		err := fs.Set(tc.flag, tc.value)
		want := `invalid argument "` + tc.value + `" for "--` + tc.flag + `" flag: ` + tc.want
		if err == nil || err.Error() != want {
			t.Errorf("--%s %s:\n got %v\nwant %s", tc.flag, tc.value, err, want)
		}
	}
}

// The flag values that parse: a grace in seconds or as a duration, a
// user ID, a bare or explicit --read-only-root.
func TestFlagValues(t *testing.T) {
	var p Pod
	var s Security
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	p.AddFlags(fs)
	s.AddFlags(fs)
	if err := fs.Parse([]string{"--termination-grace-period", "90", "--run-as-user", "1000", "--read-only-root"}); err != nil {
		t.Fatal(err)
	}
	if p.TerminationGrace != Grace(90*time.Second) || p.TerminationGrace.String() != "1m30s" || s.RunAsUser == nil || *s.RunAsUser != 1000 || s.ReadOnlyRoot == nil || !*s.ReadOnlyRoot {
		t.Fatalf("grace %s user %v read-only %v", p.TerminationGrace.String(), s.RunAsUser, s.ReadOnlyRoot)
	}
	if got := fs.Lookup("run-as-user").Value.String(); got != "1000" {
		t.Errorf("--run-as-user reads back %q", got)
	}
	if err := fs.Parse([]string{"--termination-grace-period=2m", "--read-only-root=false"}); err != nil {
		t.Fatal(err)
	}
	if p.TerminationGrace != Grace(2*time.Minute) || *s.ReadOnlyRoot || fs.Lookup("read-only-root").Value.String() != "false" {
		t.Fatalf("grace %s read-only %v", p.TerminationGrace.String(), *s.ReadOnlyRoot)
	}
	var unset Security
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	unset.AddFlags(fs)
	for _, name := range []string{"run-as-user", "read-only-root"} {
		if d := fs.Lookup(name).DefValue; d != "" {
			t.Errorf("--%s shows a default %q in the help", name, d)
		}
	}
}

// Every message of Security.Validate, and what ApplyTo puts on the spec.
func TestSecurity(t *testing.T) {
	root, big := int64(0), int64(1)<<31
	for _, tc := range []struct {
		s    Security
		want string
	}{
		{Security{Restricted: true, RunAsUser: &root}, `--run-as-user 0 contradicts --restricted: the Pod Security Standard "restricted" forbids running as root`},
		{Security{RunAsUser: &big}, "--run-as-user 2147483648 is not a user ID: want a number from 0 to 2147483647"},
	} {
		if err := tc.s.Validate(); !matches(err, tc.want) {
			t.Errorf("%+v:\n got %v\nwant %s", tc.s, err, tc.want)
		}
	}
	var none Security
	var spec kube.Spec
	none.ApplyTo(&spec)
	if none.IsSet() || spec.Restricted || spec.SecurityContext != nil {
		t.Errorf("the zero Security: set %v, spec %+v", none.IsSet(), spec)
	}
	uid, ro := int64(1234), false
	s := Security{Restricted: true, RunAsUser: &uid, ReadOnlyRoot: &ro}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	s.ApplyTo(&spec)
	uid = 1 // the spec keeps its own copy
	if !s.IsSet() || !spec.Restricted || *spec.SecurityContext.RunAsUser != 1234 || *spec.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("spec %+v, security context %+v", spec, spec.SecurityContext)
	}
}

// A second Resources registered under its own prefix names its own flags
// in Requirements' messages, as tether gitlab's helper container does.
func TestResourcesPrefix(t *testing.T) {
	var p Pod
	var helper Resources
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	p.AddFlags(fs)
	helper.AddFlags(fs, "gitlab-helper-", "the helper container")
	if err := fs.Parse([]string{"--gitlab-helper-cpu", "2", "--gitlab-helper-limits", "cpu=1", "--cpu", "1"}); err != nil {
		t.Fatal(err)
	}
	want := "the cpu request 2 is more than its limit 1 (--gitlab-helper-cpu/--gitlab-helper-memory, --gitlab-helper-requests, --gitlab-helper-limits)"
	if _, err := helper.Requirements(); err == nil || err.Error() != want {
		t.Errorf("helper: %v, want %s", err, want)
	}
	if !helper.IsSet() || p.ServiceResources.IsSet() {
		t.Errorf("IsSet: helper %v, services %v", helper.IsSet(), p.ServiceResources.IsSet())
	}
	if r, err := p.Requirements(); err != nil || r.Limits.Cpu().String() != "1" {
		t.Errorf("the build container's: %+v %v", r, err)
	}
}

// IsSet: each pod-shaping setting counts; --schedule-timeout, --config and
// --shim-from init shape nothing.
func TestPodIsSet(t *testing.T) {
	for _, p := range []Pod{{}, {ScheduleTimeout: time.Minute}, {Config: "x.yaml"}, {ShimFrom: "init"}} {
		if p.IsSet() {
			t.Errorf("%+v: set", p)
		}
	}
	for _, p := range []Pod{
		{Resources: Resources{Memory: "1Gi"}}, {ServiceResources: Resources{Limits: "cpu=1"}}, {ServiceAccount: "ci"},
		{PodPatch: "p.yaml"}, {TerminationGrace: Grace(time.Second)}, {ShimFrom: "image"}, {NodeSelector: StringList{"a=b"}},
		{Tolerations: StringList{"a"}}, {PullSecrets: StringList{"a"}}, {Services: StringList{"a"}}, {Volumes: StringList{"emptydir:/a"}},
		{Labels: StringList{"a=b"}}, {Annotations: StringList{"a=b"}}, {NoDisruptionProtection: true},
	} {
		if !p.IsSet() {
			t.Errorf("%+v: not set", p)
		}
	}
}

// The same settings from flags and filled in Go give the same spec.
func TestFlagsAndGoAgree(t *testing.T) {
	patch := filepath.Join(t.TempDir(), "patch.json")
	if err := os.WriteFile(patch, []byte(`[{"op":"add","path":"/spec/hostNetwork","value":true}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	var fromFlags Pod
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fromFlags.AddFlags(fs)
	if err := fs.Parse([]string{"--memory", "1Gi", "--service", "redis=cache", "--service-cpu", "100m", "--volume", "emptydir:/w",
		"--toleration", "gpu", "--label", "a=b", "--pod-patch", patch, "--termination-grace-period", "5", "--shim-from", "image", "--no-disruption-protection"}); err != nil {
		t.Fatal(err)
	}
	inGo := Pod{
		Resources: Resources{Memory: "1Gi"}, Services: []string{"redis=cache"}, ServiceResources: Resources{CPU: "100m"},
		Volumes: []string{"emptydir:/w"}, Tolerations: []string{"gpu"}, Labels: []string{"a=b"}, PodPatch: patch,
		TerminationGrace: Grace(5 * time.Second), ShimFrom: "image", ScheduleTimeout: kube.DefaultScheduleTimeout,
		NoDisruptionProtection: true,
	}
	var a, b kube.Spec
	if err := fromFlags.ApplyTo(&a); err != nil {
		t.Fatal(err)
	}
	if err := inGo.ApplyTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*kube.Spec{&a, &b} {
		s.Namespace, s.Name, s.JobID, s.Image, s.Serve = "ci", "job", "job", "busybox", true
	}
	pa, err := kube.Build(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := kube.Build(b)
	if err != nil {
		t.Fatal(err)
	}
	if pa.Pod.String() != pb.Pod.String() {
		t.Errorf("the pods differ: from flags %s, from Go %s", pa.Pod.Spec.String(), pb.Pod.Spec.String())
	}
	if !pa.Pod.Spec.HostNetwork || len(pa.Pod.Spec.InitContainers) == 0 {
		t.Errorf("the patch or the service is missing: %s", pa.Pod)
	}
}
