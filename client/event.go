package client

import (
	"fmt"

	"github.com/tether-ci/tether/protocol"
)

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventConnected: a connection to the shim is established and resumed
	// (Attempt counts connections, from 1).
	EventConnected EventKind = iota + 1
	// EventDisconnected: the connection broke (Err says why); the session
	// reconnects.
	EventDisconnected
	// EventScriptBegin: a script starts (Script, Phase).
	EventScriptBegin
	// EventScriptStatus: a script finished (Status, Script, Phase).
	EventScriptStatus
	// EventShimError: the shim rejected a command (Message).
	EventShimError
	// EventShimExit: the shim wrote its final record (Exit, Message).
	EventShimExit
	// EventLogReplay: the shim cannot be reached any more (its container
	// ended) before the job's result came; the session reads the rest of
	// the job from the shim's log (the transport's LogSource), from
	// Offset on.
	EventLogReplay
)

func (k EventKind) String() string {
	switch k {
	case EventConnected:
		return "connected"
	case EventDisconnected:
		return "disconnected"
	case EventScriptBegin:
		return "script-begin"
	case EventScriptStatus:
		return "script-status"
	case EventShimError:
		return "shim-error"
	case EventShimExit:
		return "shim-exit"
	case EventLogReplay:
		return "log-replay"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is a progress report from a session.
type Event struct {
	// Kind says what happened; it decides which other fields are set.
	Kind EventKind
	// Attempt is the connection number (EventConnected, EventDisconnected).
	Attempt int
	// Err is why the connection broke (EventDisconnected).
	Err error
	// Script and Phase name the script (EventScriptBegin, EventScriptStatus).
	Script, Phase string
	// Status is the script's status (EventScriptStatus).
	Status protocol.Status
	// Exit is the shim's final record (EventShimExit).
	Exit protocol.Exit
	// Message is the shim's explanation (EventShimError, EventShimExit).
	Message string
	// Offset is the stream offset the log is read from (EventLogReplay).
	Offset int64
}
