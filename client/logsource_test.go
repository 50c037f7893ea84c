package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// loggedShim is a fake shim whose stdout is also kept in a log (like a
// Kubernetes container log: records and the shim's stderr lines mixed),
// readable after the shim is gone.
type loggedShim struct {
	*fakeShim
	rotatedTo int64 // the log starts at this offset (0: whole)
	gapAt     int64 // the record at this offset is missing from the log (0: none)
	opened    int
	// intoBlocks logs a diagnostic inside each block record's payload
	// too, after its first line, as a runtime can when the log mixes
	// stdout and stderr.
	intoBlocks bool
}

func (l *loggedShim) OpenLog(context.Context) (io.ReadCloser, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened++
	var b bytes.Buffer
	for i, off := range l.offsets {
		end := int64(len(l.stream))
		if i+1 < len(l.offsets) {
			end = l.offsets[i+1]
		}
		if off < l.rotatedTo || (l.gapAt > 0 && off == l.gapAt) {
			continue
		}
		rec := l.stream[off:end]
		diag := fmt.Sprintf("time=now level=DEBUG msg=\"shim diagnostics %d\"\n", i) // stderr in the same log
		if hdr := bytes.IndexByte(rec, '\n'); l.intoBlocks && rec[0] == byte(protocol.TypeBlock) && hdr >= 0 {
			if nl := bytes.IndexByte(rec[hdr+1:], '\n'); nl >= 0 && hdr+1+nl+1 < len(rec) {
				at := hdr + 1 + nl + 1
				rec = append(append(append([]byte(nil), rec[:at]...), diag...), rec[at:]...)
			}
		}
		b.Write(rec)
		b.WriteString(diag)
	}
	return io.NopCloser(&b), nil
}

// The job's end happened while no connection was attached and the shim is
// gone since: the session reads the rest from the transport's log source,
// skipping the log's non-record lines, and returns the job's result.
func TestSessionReadsTheLogSourceAfterTheShimIsGone(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rotated    bool
		gap        bool
		intoBlocks bool
		wantErr    string
	}{
		{name: "whole log"},
		{name: "rotated", rotated: true, wantErr: "output incomplete"},
		// A record missing between two the log holds (rotated away while
		// it was read): said with the offset, never the records after
		// the gap glued to those before it.
		{name: "gap inside the log", gap: true, wantErr: "output incomplete: 25 bytes of the shim's record stream lost after stream offset"},
		// A log that mixes the shim's stderr into its stdout can have a
		// diagnostic inside a block: an error saying so, never the
		// block's bytes shifted.
		{name: "diagnostic inside a block", intoBlocks: true, wantErr: "logged inside it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeShim(t)
			l := &loggedShim{fakeShim: f, intoBlocks: tc.intoBlocks}
			f.start()
			gone := make(chan struct{}) // closed once the shim wrote its last record
			f.onJob = func(f *fakeShim, c protocol.Command) {
				script := c.Scripts[0]
				f.record(protocol.TypeBegin, protocol.Begin{Script: script, Phase: "script", Job: c.ID})
				f.output("seen live\n")
				go func() {
					time.Sleep(50 * time.Millisecond)
					f.cut()
					if tc.gap {
						l.mu.Lock()
						l.gapAt = int64(len(l.stream))
						l.mu.Unlock()
					}
					f.output("written while away\n")
					f.blocks("in a block\ntwo lines, \\ \r raw\n")
					f.record(protocol.TypeStatus, protocol.Status{Script: script, CommandExitCode: 4, Phase: "script", Job: c.ID})
					f.record(protocol.TypeJob, protocol.JobDone{ExitCode: 4, FailedScript: script, Job: c.ID})
					if tc.rotated {
						l.mu.Lock()
						l.rotatedTo = l.offsets[len(l.offsets)-1]
						l.mu.Unlock()
					}
					close(gone)
				}()
			}
			f.connectErr = func(n int) error {
				if n > 1 {
					// The shim is gone only after its last record: a
					// reconnect right after the cut must not find it gone
					// with its log still incomplete.
					<-gone
					return fmt.Errorf("container terminated: %w", client.ErrShimGone)
				}
				return nil
			}
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var replays []client.Event
			res, err := client.Run(ctx, l, client.Job{Scripts: []string{"/s.sh"}}, client.Options{
				Output: &out, ReconnectMin: time.Millisecond, ReconnectMax: 10 * time.Millisecond,
				Events: func(ev client.Event) {
					if ev.Kind == client.EventLogReplay {
						replays = append(replays, ev)
					}
				}})
			if l.opened != 1 {
				t.Fatalf("the log was opened %d times, want once", l.opened)
			}
			// The integration learns that the rest came from the log, from
			// the offset the live output reached.
			if len(replays) != 1 || replays[0].Offset <= 0 {
				t.Fatalf("log-replay events %+v", replays)
			}
			if tc.wantErr != "" {
				if !errors.Is(err, client.ErrNoResult) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run: %v; want ErrNoResult mentioning %q", err, tc.wantErr)
				}
				want := "seen live\nwritten while away\n"
				if tc.gap {
					want = "seen live\n"
				}
				if got := out.String(); !strings.HasPrefix(want, got) {
					t.Fatalf("output %q; want no more than what came before the gap or the broken block (%q)", got, want)
				}
				var gap *client.LogGapError
				if (tc.gap || tc.rotated) && (!errors.As(err, &gap) || gap.Lost <= 0 || gap.After <= 0) {
					t.Fatalf("Run: %v; want a *LogGapError with the bytes lost and where", err)
				}
				return
			}
			if err != nil || res.ExitCode != 4 {
				t.Fatalf("Run: %v, exit %d; want the job's exit code 4 from the log", err, res.ExitCode)
			}
			if got := out.String(); got != "seen live\nwritten while away\nin a block\ntwo lines, \\ \r raw\n" {
				t.Fatalf("output %q", got)
			}
		})
	}
}
