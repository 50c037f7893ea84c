package local_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// With Options.Stderr the job's stderr reaches it and its stdout reaches
// Output, each byte for byte, however often the connection is cut (cuts
// land inside stdout blocks, inside stderr records and between them).
func TestStderrApartSurvivesCuts(t *testing.T) {
	const chunk, chunks = 16 << 10, 60
	outPath, outData := bigFile(t, chunk*chunks+333, 11)
	errPath, errData := bigFile(t, chunk*chunks+555, 12)
	// Both streams in pieces, alternating, over about a second: the
	// second dd's data goes to stderr, then its own messages to
	// /dev/null (redirections apply left to right).
	body := fmt.Sprintf("i=0\nwhile [ $i -le %d ]; do dd if=%s bs=%d skip=$i count=1 2>/dev/null; dd if=%s bs=%d skip=$i count=1 >&2 2>/dev/null; i=$((i+1)); done\n",
		chunks, outPath, chunk, errPath, chunk)
	s := startShim(t)
	var out, errOut syncbuf.Buffer
	opts := fastOpts(&out)
	opts.Stderr = &errOut
	stop := make(chan struct{})
	cuts := 0
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(5, 7))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(1+r.IntN(15)) * time.Millisecond):
				s.Cut()
				cuts++
			}
		}
	})
	res, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "both.sh", body)}}, opts)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Run after %d cuts: %v", cuts, err)
	}
	if got := out.Bytes(); !bytes.Equal(got, outData) {
		t.Errorf("stdout differs: %d bytes, want %d (%d reconnects)", len(got), len(outData), res.Reconnects)
	}
	if got := errOut.Bytes(); !bytes.Equal(got, errData) {
		t.Errorf("stderr differs: %d bytes, want %d (%d reconnects)", len(got), len(errData), res.Reconnects)
	}
	if res.ExitCode != 0 || res.Reconnects < 5 {
		t.Fatalf("exit %d after %d reconnects (%d cuts): want 0 and several reconnects", res.ExitCode, res.Reconnects, cuts)
	}
}

// Without Options.Stderr a job's stderr is merged into Output in the order
// written; with it, an Attach that follows the job writes its stderr
// apart too, and one without it merges the stderr records into Output.
func TestStderrMergedUnlessAsked(t *testing.T) {
	body := "echo out1\necho err1 >&2\necho out2\nprintf err2 >&2\n"
	s := startShim(t)
	var merged syncbuf.Buffer
	if _, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "m.sh", body)}}, fastOpts(&merged)); err != nil {
		t.Fatal(err)
	}
	if got := merged.String(); got != "out1\nerr1\nout2\nerr2" {
		t.Fatalf("merged output %q", got)
	}

	s = startShim(t)
	var out, errOut syncbuf.Buffer
	opts := fastOpts(&out)
	opts.Stderr = &errOut
	if _, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "a.sh", body)}}, opts); err != nil {
		t.Fatal(err)
	}
	if out.String() != "out1\nout2\n" || errOut.String() != "err1\nerr2" {
		t.Fatalf("stdout %q, stderr %q", out.String(), errOut.String())
	}
	var all syncbuf.Buffer
	if _, err := client.Attach(context.Background(), s, 0, fastOpts(&all)); err != nil {
		t.Fatal(err)
	}
	if got := all.String(); len(got) != len("out1\nerr1\nout2\nerr2") || !bytes.Contains([]byte(got), []byte("err2")) {
		t.Fatalf("Attach without Stderr wrote %q", got)
	}
	var out2, err2 syncbuf.Buffer
	aopts := fastOpts(&out2)
	aopts.Stderr = &err2
	if _, err := client.Attach(context.Background(), s, 0, aopts); err != nil {
		t.Fatal(err)
	}
	if out2.String() != "out1\nout2\n" || err2.String() != "err1\nerr2" {
		t.Fatalf("Attach: stdout %q, stderr %q", out2.String(), err2.String())
	}
}

// Options.OutputLimit counts Output and Stderr together.
func TestStderrCountsTowardsTheOutputLimit(t *testing.T) {
	s := startShim(t)
	var out, errOut syncbuf.Buffer
	opts := fastOpts(&out)
	opts.Stderr = &errOut
	opts.OutputLimit = 10
	res, err := client.Run(context.Background(), s, client.Job{Scripts: []string{script(t, "l.sh", "echo 123456\nsleep 0.2\necho abcdef >&2\n")}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "123456\n" || errOut.String() != "abc" || res.OutputDropped != 4 {
		t.Fatalf("stdout %q, stderr %q, dropped %d", out.String(), errOut.String(), res.OutputDropped)
	}
}
