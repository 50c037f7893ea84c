package local_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// Attach to a shim with nothing to follow (no job ever submitted, or only
// one that ended before the offset) returns ErrNoJob at once instead of
// waiting, its pings keeping the idle shim alive, forever.
func TestAttachWithNothingToFollowIsErrNoJob(t *testing.T) {
	s := startShim(t)
	attach := func(from int64) (client.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out syncbuf.Buffer
		opts := fastOpts(&out)
		opts.CancelTimeout = 2 * time.Second
		return client.Attach(ctx, s, from, opts)
	}
	if _, err := attach(0); !errors.Is(err, client.ErrNoJob) || !errors.Is(err, client.ErrNoResult) {
		t.Fatalf("attach to a shim that never got a job: %v, want ErrNoJob and ErrNoResult", err)
	}

	var out syncbuf.Buffer
	res, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "a.sh", "echo done; exit 4\n")}}, fastOpts(&out))
	if err != nil || res.ExitCode != 4 {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	if _, err := attach(res.Offset); !errors.Is(err, client.ErrNoJob) {
		t.Fatalf("attach past the finished job (offset %d): %v, want ErrNoJob", res.Offset, err)
	}
	// From the start, the finished job is still there to replay.
	again, err := attach(0)
	if err != nil || again.ExitCode != 4 {
		t.Fatalf("attach from 0 after the job: %+v, %v, want the job's exit code 4", again, err)
	}
}
