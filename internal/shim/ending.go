package shim

import (
	"fmt"

	"github.com/tether-ci/tether/protocol"
)

// endReason is why the shim ends. Its String is the reason of the final
// record; its code is the shim's exit code where the reason fixes it.
type endReason int

// The reasons the shim ends.
const (
	endExitCommand endReason = iota + 1 // an exit command came and nothing is left to run
	endStdinEOF                         // stdin closed and nothing is left to run
	endDeadline                         // the job deadline passed
	endTTL                              // the pod's TTL annotation expired
	endIdle                             // no command or ping came for the idle timeout while idle
	endSignal                           // SIGTERM (pod deletion, container stop) or the shim's context ended
	endFatal                            // the record stream on stdout failed
)

// String returns the reason as the final record spells it.
func (r endReason) String() string {
	switch r {
	case endExitCommand:
		return protocol.ReasonExitCommand
	case endStdinEOF:
		return protocol.ReasonStdinEOF
	case endDeadline:
		return protocol.ReasonDeadline
	case endTTL:
		return protocol.ReasonTTL
	case endIdle:
		return protocol.ReasonIdle
	case endSignal:
		return protocol.ReasonSignal
	case endFatal:
		return protocol.ReasonFatal
	}
	return fmt.Sprintf("endReason(%d)", int(r))
}

// Exit codes of the reasons that fix one.
const (
	codeTimedOut = 124      // deadline, TTL or a job's own timeout, as timeout(1) reports it
	codeIdle     = 125      // the client is gone
	codeSIGTERM  = 128 + 15 // stopped as SIGTERM stops a script (also a cancelled job)
	codeFatal    = 70       // EX_SOFTWARE: the shim could not go on
	codeSkipped  = 128 + 2  // a script stopped before it started, as a shell reports an interrupt
)

// code returns the exit code the reason fixes, or the code of the work
// done last for the reasons that end the shim normally.
func (r endReason) code(last int) int {
	switch r {
	case endDeadline, endTTL:
		return codeTimedOut
	case endIdle:
		return codeIdle
	case endSignal:
		return codeSIGTERM
	case endFatal:
		return codeFatal
	}
	return last
}

// ending is the engine's decision to end the shim: why, and the message of
// the final record. The exit code follows from the reason (see code).
type ending struct {
	reason  endReason
	message string
}
