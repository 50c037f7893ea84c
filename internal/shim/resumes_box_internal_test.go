package shim

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

func resumeFrom(nonce string, from int64) protocol.Command {
	return protocol.Command{Cmd: protocol.CmdResume, Nonce: nonce, From: from}
}

// A box that fills up (stdout blocked while the client's connections keep
// breaking) collapses to the newest resume and the one asking for the
// earliest offset, says so, and keeps answering: the replay then starts at
// the earliest offset any resume asked for.
func TestResumeBoxCollapsesToTheNewestAndTheEarliestOffset(t *testing.T) {
	var log bytes.Buffer
	b := newResumeBox(slog.New(slog.NewTextHandler(&log, nil)))
	// The oldest asks for the earliest offset (another reader's, or the
	// client's before it received more).
	b.put(resumeFrom("first", 10))
	for i := 1; i < maxPendingResumes; i++ {
		b.put(resumeFrom(fmt.Sprint("n", i), 1000))
	}
	if log.Len() != 0 {
		t.Fatalf("a box not over its bound said: %s", log.String())
	}
	b.put(resumeFrom("newest", 1000))
	got := b.take()
	if len(got) != 2 || got[0].Nonce != "first" || got[0].From != 10 || got[1].Nonce != "newest" {
		t.Fatalf("after the collapse the box holds %d resumes, first %+v; want the earliest offset's and the newest", len(got), got[0])
	}
	if s := log.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, fmt.Sprintf("dropped=%d", maxPendingResumes-1)) ||
		!strings.Contains(s, "earliest_from=10") {
		t.Fatalf("the collapse said %q; want a warning with what was dropped and kept", s)
	}

	// The newest asking for the earliest offset itself is all that stays.
	log.Reset()
	for i := range maxPendingResumes {
		b.put(resumeFrom(fmt.Sprint("m", i), int64(500+i)))
	}
	b.put(resumeFrom("newest", 20))
	if got := b.take(); len(got) != 1 || got[0].Nonce != "newest" {
		t.Fatalf("box %+v; want the newest alone (it asks for the earliest offset)", got)
	}
	if !strings.Contains(log.String(), fmt.Sprintf("dropped=%d", maxPendingResumes)) {
		t.Fatalf("the collapse said %q", log.String())
	}
}
