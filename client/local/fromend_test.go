package local_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// TestRunFromEnd: jobs submitted one after another to one shim with
// Options.FromEnd each get their own output alone and their own exit code,
// however much the earlier ones wrote, over one connection each.
func TestRunFromEnd(t *testing.T) {
	s := startShim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, tc := range []struct {
		body, want string
		code       int
	}{
		{"i=0; while [ $i -lt 500 ]; do echo \"first $i\"; i=$((i+1)); done\n", "", 0},
		{"printf 'second, no newline'; exit 3\n", "second, no newline", 3},
		{"echo third\n", "third\n", 0},
	} {
		var out syncbuf.Buffer
		o := fastOpts(&out)
		o.FromEnd = true
		res, err := client.Run(ctx, s, client.Job{Scripts: []string{script(t, "s.sh", tc.body)}}, o)
		if err != nil {
			t.Fatalf("job %d: Run: %v", i, err)
		}
		want := tc.want
		if i == 0 {
			var b strings.Builder
			for j := range 500 {
				b.WriteString("first " + strconv.Itoa(j) + "\n")
			}
			want = b.String()
		}
		if got := out.String(); got != want {
			t.Fatalf("job %d: output %q, want %q", i, got, want)
		}
		if res.ExitCode != tc.code || res.Reconnects != 0 {
			t.Fatalf("job %d: exit %d after %d reconnects, want %d and none", i, res.ExitCode, res.Reconnects, tc.code)
		}
	}
	var out syncbuf.Buffer
	o := fastOpts(&out)
	o.FromEnd, o.From = true, 5
	if _, err := client.Run(ctx, s, client.Job{Scripts: []string{"/x"}}, o); err == nil {
		t.Fatal("Run with From and FromEnd: no error")
	}
}
