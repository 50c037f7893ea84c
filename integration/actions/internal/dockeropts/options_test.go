package dockeropts

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseCreateOptionsMapsDockerFlags(t *testing.T) {
	o, err := Parse(`--cpus 1.5 -m 512m --user 1000:1001 -e A=1 --env "B=two words" -w /src --entrypoint /bin/sh ` +
		`--privileged --cap-add sys_admin --cap-drop=CAP_NET_RAW --hostname builder --health-cmd "pg_isready -U postgres" ` +
		`--health-interval 2s --health-timeout=3s --health-retries 4 --health-start-period 10s`)
	if err != nil {
		t.Fatal(err)
	}
	if !o.CPU.Equal(resource.MustParse("1500m")) || o.Memory.Value() != 512<<20 {
		t.Errorf("cpu %v memory %v", o.CPU, o.Memory)
	}
	if *o.User != 1000 || *o.Group != 1001 || o.Env["A"] != "1" || o.Env["B"] != "two words" || o.Workdir != "/src" || o.Entrypoint != "/bin/sh" {
		t.Errorf("options %+v", o)
	}
	if !o.Privileged || !slices.Equal(o.CapAdd, []corev1.Capability{"SYS_ADMIN"}) || !slices.Equal(o.CapDrop, []corev1.Capability{"NET_RAW"}) || o.Hostname != "builder" {
		t.Errorf("security %+v", o)
	}
	if o.HealthCmd != "pg_isready -U postgres" || o.HealthInterval != 2*time.Second || o.HealthTimeout != 3*time.Second || o.HealthRetries != 4 || o.HealthPeriod != 10*time.Second {
		t.Errorf("health %+v", o)
	}
	p := o.Probe()
	if !slices.Equal(p.Exec.Command, []string{"/bin/sh", "-c", "pg_isready -U postgres"}) || p.PeriodSeconds != 2 || p.TimeoutSeconds != 3 || p.FailureThreshold != 4+5 {
		t.Errorf("probe %+v: want every 2s, timeout 3s, 4 retries plus 10s/2s of start period", p)
	}
	if len(o.Ignored) != 0 {
		t.Errorf("ignored %v", o.Ignored)
	}
}

func TestParseCreateOptionsShortForms(t *testing.T) {
	o, err := Parse(`-m1g -eX=y -u 0`)
	if err != nil {
		t.Fatal(err)
	}
	if o.Memory.Value() != 1<<30 || o.Env["X"] != "y" || *o.User != 0 {
		t.Errorf("options %+v", o)
	}
	if o, err := Parse(""); err != nil || o.Probe() != nil || len(o.Ignored) != 0 {
		t.Errorf("empty options: %+v, %v", o, err)
	}
}

func TestParseCreateOptionsDockerHealthDefaults(t *testing.T) {
	o, err := Parse(`--health-cmd=true`)
	if err != nil {
		t.Fatal(err)
	}
	p := o.Probe()
	if p.PeriodSeconds != 30 || p.TimeoutSeconds != 30 || p.FailureThreshold != 3 {
		t.Errorf("probe %+v: want docker's defaults (30s, 30s, 3 retries)", p)
	}
}

func TestParseCreateOptionsIgnoresTheRest(t *testing.T) {
	o, err := Parse(`--shm-size 2g --init --network-alias=db --tmpfs /run -t --cpus 2`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--shm-size 2g", "--init", "--network-alias=db", "--tmpfs /run", "-t"}
	if !slices.Equal(o.Ignored, want) {
		t.Errorf("ignored %q, want %q", o.Ignored, want)
	}
	if !o.CPU.Equal(resource.MustParse("2")) {
		t.Errorf("cpu %v after ignored flags", o.CPU)
	}
}

func TestParseCreateOptionsErrors(t *testing.T) {
	for _, tc := range []struct{ opts, want string }{
		{`--health-cmd "pg_isready`, "unterminated"},
		{`--cpus`, "--cpus needs a value"},
		{`--memory --cpus 1`, "--memory needs a value"},
		{`--memory lots`, "want a size"},
		{`--cpus -1`, "--cpus needs a value"},
		{`--cpus zero`, "number of CPUs"},
		{`--health-interval 5`, "want a duration"},
		{`--health-retries many`, "number of retries"},
		{`--user postgres`, "numeric uid"},
		{`--user 1:staff`, "numeric uid"},
		{`--env NOVALUE`, "KEY=VALUE"},
		{`--workdir src`, "absolute path"},
		{`--privileged=maybe`, "true or false"},
		{`postgres:16`, "not a flag"},
	} {
		_, err := Parse(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.opts, err, tc.want)
		}
	}
}

func TestDockerBytes(t *testing.T) {
	for in, want := range map[string]int64{"100": 100, "100b": 100, "2k": 2048, "1.5m": 3 << 19, "1g": 1 << 30, "1GB": 1 << 30} {
		if got, err := dockerBytes(in); err != nil || got != want {
			t.Errorf("dockerBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}
