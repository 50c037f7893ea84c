package settings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// writeFile writes a config file and returns its path.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tether.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// integration is an integration's settings on top of the pod's, as
// tether run and tether gitlab have them: its own flags on the same
// FlagSet.
type integration struct {
	Pod
	Image   string
	Timeout time.Duration
	Keep    bool
	Env     StringList
}

// flagSet returns a FlagSet named "tether demo" with the pod settings and
// the integration's own flags, bound to s.
func (s *integration) flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("tether demo", pflag.ContinueOnError)
	s.AddFlags(fs)
	fs.StringVar(&s.Image, "image", "", "image")
	fs.DurationVar(&s.Timeout, "timeout", time.Hour, "timeout")
	fs.BoolVar(&s.Keep, "keep", false, "keep")
	fs.Var(&s.Env, "env", "variable K=V (repeatable)")
	return fs
}

// A config file and the command line meet: the file sets what the command
// line left alone, for the pod settings and the integration's own alike,
// and a flag given on the command line wins over its key, a repeatable one
// whole (the file's list is not appended to it).
func TestFileAndFlagsMeet(t *testing.T) {
	path := writeFile(t, `
image: alpine:3
timeout: 30m
keep: true
cpu: 2
memory: 64Mi
schedule-timeout: 90s
termination-grace-period: 7
toleration: [gpu:NoSchedule]
node-selector: {pool: gpu, disk: ssd}
label: [from=file]
env: [A=1, B=2]
service-account: from-file
`)
	var s integration
	fs := s.flagSet()
	err := fs.Parse([]string{"--config", path, "--label", "from=cli", "--service-account", "from-cli", "--timeout", "5m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(fs); err != nil {
		t.Fatal(err)
	}
	if s.Image != "alpine:3" || !s.Keep || s.CPU != "2" || s.Memory != "64Mi" || s.ScheduleTimeout != 90*time.Second || s.TerminationGrace != Grace(7*time.Second) {
		t.Errorf("scalars from the file: image %q keep %v cpu %q memory %q schedule-timeout %s grace %s",
			s.Image, s.Keep, s.CPU, s.Memory, s.ScheduleTimeout, time.Duration(s.TerminationGrace))
	}
	if !slices.Equal(s.Tolerations, StringList{"gpu:NoSchedule"}) || !slices.Equal(s.Env, StringList{"A=1", "B=2"}) {
		t.Errorf("lists from the file: tolerations %v env %v", s.Tolerations, s.Env)
	}
	if !slices.Equal(s.NodeSelector, StringList{"disk=ssd", "pool=gpu"}) {
		t.Errorf("a map for a K=V flag: node-selector %v, want disk=ssd and pool=gpu in key order", s.NodeSelector)
	}
	if s.Timeout != 5*time.Minute || s.ServiceAccount != "from-cli" || !slices.Equal(s.Labels, StringList{"from=cli"}) {
		t.Errorf("the command line did not win: timeout %s service-account %q labels %v", s.Timeout, s.ServiceAccount, s.Labels)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("the merged settings: %v", err)
	}
}

// No file named: Complete changes nothing.
func TestCompleteWithoutFile(t *testing.T) {
	var s integration
	fs := s.flagSet()
	if err := fs.Parse([]string{"--cpu", "1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(fs); err != nil || s.CPU != "1" || s.Image != "" || s.Timeout != time.Hour {
		t.Fatalf("err %v cpu %q image %q timeout %s", err, s.CPU, s.Image, s.Timeout)
	}
}

// Every error of the loader, in full: each names the file and, where one
// is at fault, the key.
func TestFileErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"imgae: alpine\n", `PATH: unknown key "imgae" (did you mean "image"?): keys are the long names of tether demo's flags (tether demo --help)`},
		{"frobnicate: 1\n", `PATH: unknown key "frobnicate": keys are the long names of tether demo's flags (tether demo --help)`},
		{"config: other.yaml\n", `PATH: unknown key "config": keys are the long names of tether demo's flags (tether demo --help)`},
		{"confg: other.yaml\n", `PATH: unknown key "confg": keys are the long names of tether demo's flags (tether demo --help)`},
		{"image: [a, b]\n", `PATH: key "image" (--image): a list, but the flag takes one value`},
		{"image: {a: b}\n", `PATH: key "image" (--image): a map, but the flag takes one value`},
		{"image:\n", `PATH: key "image" (--image): no value (null)`},
		{"env: [A=1, null]\n", `PATH: key "env" (--env): item 1: no value (null)`},
		{"env: [{a: 1}]\n", `PATH: key "env" (--env): item 0: want a string, number or bool, got map[string]interface {}`},
		{"label: {a: [x]}\n", `PATH: key "label" (--label): key "a": want a string, number or bool, got []interface {}`},
		{"timeout: soon\n", `PATH: key "timeout": invalid value "soon" for --timeout: invalid argument "soon" for "--timeout" flag: time: invalid duration "soon"`},
		{"termination-grace-period: 0\n", `PATH: key "termination-grace-period": invalid value "0" for --termination-grace-period: invalid argument "0" for "--termination-grace-period" flag: want at least 1s (Kubernetes removes a pod with a grace of 0 before its containers stop)`},
		{"keep: maybe\n", `PATH: key "keep": invalid value "maybe" for --keep: invalid argument "maybe" for "--keep" flag: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{"image: a\nimage: b\n", `--config PATH: not valid YAML: yaml: unmarshal errors:` + "\n" + `  line 2: key "image" already set in map`},
		{"- a\n", `--config PATH: want a map of flag names to values: json: cannot unmarshal array into Go value of type map[string]interface {}`},
		{"just text\n", `--config PATH: want a map of flag names to values: json: cannot unmarshal string into Go value of type map[string]interface {}`},
	} {
		path := writeFile(t, tc.body)
		var s integration
		fs := s.flagSet()
		if err := fs.Parse([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		want := strings.ReplaceAll(tc.want, "PATH", path)
		if err := s.Complete(fs); err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", tc.body, err, want)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	var s integration
	fs := s.flagSet()
	want := "--config: read the config file: open " + missing + ": no such file or directory"
	if err := ApplyFile(fs, missing); err == nil || err.Error() != want {
		t.Errorf("missing file:\n got %v\nwant %s", err, want)
	}
}

// didYouMean names the closest flag within two edits, never --config, and
// nothing for a name no flag is close to.
func TestDidYouMean(t *testing.T) {
	var s integration
	fs := s.flagSet()
	for name, want := range map[string]string{
		"imag":         ` (did you mean "image"?)`,
		"tolerations":  ` (did you mean "toleration"?)`,
		"servce":       ` (did you mean "service"?)`,
		"confi":        "",
		"x":            "",
		"podpatchtype": ` (did you mean "pod-patch-type"?)`,
		"pod":          "",
	} {
		if got := didYouMean(fs, name); got != want {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
	}
}

// ApplyValues takes the values of a file another decoder read (int64 and
// float64 numbers as sigs.k8s.io/yaml gives them) and names them by where.
func TestApplyValues(t *testing.T) {
	var s integration
	fs := s.flagSet()
	if err := ApplyValues(fs, "pools.yaml: pool \"a\"", map[string]any{"cpu": int64(2), "memory": "64Mi", "timeout": "90s", "keep": true}); err != nil {
		t.Fatal(err)
	}
	if s.CPU != "2" || s.Memory != "64Mi" || s.Timeout != 90*time.Second || !s.Keep {
		t.Errorf("values %+v", s)
	}
	err := ApplyValues(s.flagSet(), "pools.yaml: pool \"a\"", map[string]any{"cpu": 0.5, "imag": "x"})
	if err == nil || !strings.Contains(err.Error(), `pools.yaml: pool "a": unknown key "imag" (did you mean "image"?)`) {
		t.Errorf("error %v", err)
	}
}
