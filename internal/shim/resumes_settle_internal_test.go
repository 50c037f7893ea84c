package shim

import (
	"log/slog"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

// takeSettled waits while the command reader reads what waits on stdin,
// and returns the resume it put in meanwhile.
func TestTakeSettledWaitsForTheReader(t *testing.T) {
	b := newResumeBox(slog.New(slog.DiscardHandler))
	calls := 0
	b.unread = func() int {
		calls++
		if calls == 3 { // the reader read the resume and put it in
			b.put(protocol.Command{Cmd: protocol.CmdResume, Nonce: "late"})
			return 0
		}
		return 40
	}
	got := b.takeSettled()
	if len(got) != 1 || got[0].Nonce != "late" {
		t.Fatalf("took %+v, want the resume the reader put in while takeSettled waited", got)
	}
}

// A reader that makes no progress (its queue to the serve loop is full) is
// waited for once, not again at every mark while nothing changes.
func TestTakeSettledDoesNotWaitTwiceForAStuckReader(t *testing.T) {
	b := newResumeBox(slog.New(slog.DiscardHandler))
	calls := 0
	b.unread = func() int { calls++; return 40 }
	b.takeSettled()
	if calls < 4 {
		t.Fatalf("unread asked %d times, want a wait of a few tries first", calls)
	}
	calls = 0
	b.takeSettled()
	if calls != 1 {
		t.Fatalf("unread asked %d times at the next mark, want 1 (the reader is still stuck)", calls)
	}
	b.unread = func() int { calls++; return 0 }
	calls = 0
	if got := b.takeSettled(); len(got) != 0 || calls != 1 {
		t.Fatalf("took %+v after %d questions, want nothing after 1", got, calls)
	}
}
