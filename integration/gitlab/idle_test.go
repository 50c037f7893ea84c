package gitlab

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
)

// The default idle-timeout of `tether gitlab` is the one docs/gitlab.md
// gives (its config sample and its section on a runner that dies), and
// it is longer than what keeps a live job's next stage away: the
// runner's longest stage-retry sleep (5 minutes) plus the time a stage's
// process retries an unreachable API server.
func TestGitLabIdleTimeoutDefault(t *testing.T) {
	var f Settings
	if _, err := Parse(&f, nil, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if f.IdleTimeout != gitlabIdleTimeout {
		t.Fatalf("default idle-timeout %v, want %v", f.IdleTimeout, gitlabIdleTimeout)
	}
	if min := 5*time.Minute + client.DefaultReconnectTimeout; f.IdleTimeout <= min {
		t.Errorf("default idle-timeout %v: not longer than the runner's longest retry sleep plus the reconnect timeout (%v)", f.IdleTimeout, min)
	}

	const doc = "../../docs/gitlab.md"
	yamls := docBlocks(t, doc, "yaml")
	if len(yamls) == 0 {
		t.Fatalf("no yaml block in %s, want the driver config sample first", doc)
	}
	var sample string
	for _, line := range strings.Split(yamls[0], "\n") {
		if v, ok := strings.CutPrefix(line, "idle-timeout:"); ok {
			sample = v
		}
	}
	value, comment, _ := strings.Cut(sample, "#")
	d, err := time.ParseDuration(strings.TrimSpace(value))
	if err != nil || d != f.IdleTimeout || !strings.Contains(comment, "default") {
		t.Errorf("the sample's idle-timeout line %q: want the default %v, marked as the default", sample, f.IdleTimeout)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"for `idle-timeout` (default " + strings.TrimSpace(value) + ")",
		fmt.Sprintf("Why %d minutes.", int(f.IdleTimeout/time.Minute)),
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not say %q", doc, want)
		}
	}
}
