// Package protocol is Tether's wire format between tether-shim and its client.
//
// The shim writes a stream of records to its stdout; each record is one line
// ("TYPE SEQ PAYLOAD\n"), or a block of raw output ("d SEQ LEN\n", LEN
// bytes, "\n"), at most MaxRecord bytes. The client writes commands
// to the shim's stdin, one per line. PROTOCOL.md beside this file is the full
// specification; this package is its only implementation, shared by both
// programs.
package protocol

import "fmt"

// Version is the protocol version this package speaks (version 2 added
// TypeBlock, version 3 TypeStderr and TypeStderrPartial). A client accepts
// a hello record of a version from MinVersion to Version and rejects any
// other.
const Version = 3

// MinVersion is the oldest protocol version this package still reads:
// version 1 is version 2 without TypeBlock, version 2 is version 3 without
// the stderr records.
const MinVersion = 1

// MaxRecord is the largest record in bytes, including its trailing newline.
// containerd writes a log line at every newline or 16 KiB, so records of this
// size keep `kubectl logs` both prompt and complete.
const MaxRecord = 16 * 1024

// Type identifies a record. It is the record's first byte.
type Type byte

// Record types. Sequenced records (every type except TypeResumed and TypeAlive)
// carry their byte offset in the record stream and can be replayed.
const (
	TypeHello   Type = 'h' // handshake, always the record at offset 0 (JSON Hello)
	TypeOutput  Type = 'o' // a complete line of script output; the record's newline is the line's
	TypePartial Type = 'p' // script output without a newline: a partial line or a piece of a long one
	// TypeStderr and TypeStderrPartial are TypeOutput and TypePartial for
	// a script's stderr, sent only for a command that asked for it kept
	// apart (Command.Stderr); otherwise stderr is part of the o, p and d
	// records' output.
	TypeStderr        Type = 'O' // a complete line of the script's stderr
	TypeStderrPartial Type = 'P' // the script's stderr without a newline
	TypeBlock         Type = 'd' // raw script output: "d SEQ LEN\n", LEN bytes as the script wrote them, "\n"
	TypeBegin         Type = 'b' // a script is starting (JSON Begin)
	TypeStatus        Type = 's' // a script finished (JSON Status)
	TypeJob           Type = 'j' // a job finished (JSON JobDone)
	TypeError         Type = 'e' // a command was rejected (JSON ErrorRecord)
	TypeExit          Type = 'x' // the shim is exiting; always its last record (JSON Exit)
	TypeResumed       Type = 'r' // unsequenced answer to a resume command (JSON Resumed)
	TypeAlive         Type = 'a' // unsequenced answer to a ping command (JSON Alive)
)

// Unsequenced is the Seq of records that are not part of the replayable
// stream (TypeResumed and TypeAlive). On the wire it is written as "-".
const Unsequenced int64 = -1

// Sequenced reports whether records of type t carry an offset and are stored
// for replay.
func (t Type) Sequenced() bool { return t != TypeResumed && t != TypeAlive }

// Known reports whether t is a record type of this protocol version.
func (t Type) Known() bool {
	switch t {
	case TypeHello, TypeOutput, TypePartial, TypeBlock, TypeStderr, TypeStderrPartial, TypeBegin, TypeStatus, TypeJob,
		TypeError, TypeExit, TypeResumed, TypeAlive:
		return true
	}
	return false
}

// IsOutput reports whether records of type t carry script output bytes of
// its stdout (with its stderr, unless that was asked for apart).
func (t Type) IsOutput() bool { return t == TypeOutput || t == TypePartial || t == TypeBlock }

// IsStderr reports whether records of type t carry a script's stderr bytes
// kept apart from its stdout.
func (t Type) IsStderr() bool { return t == TypeStderr || t == TypeStderrPartial }

func (t Type) String() string {
	if t >= 0x21 && t < 0x7f {
		return string(rune(t))
	}
	return fmt.Sprintf("0x%02x", byte(t))
}

// Record is one decoded record.
type Record struct {
	// Type is what the record is.
	Type Type
	// Seq is the record's byte offset in the record stream, or Unsequenced.
	Seq int64
	// Size is the record's encoded length including its (final) newline; the next
	// sequenced record starts at Seq+Size.
	Size int
	// Payload is the decoded payload: the exact output bytes for output
	// and stderr records (with the newline for TypeOutput and
	// TypeStderr), JSON for the others. It is
	// only valid until the decoder's next call.
	Payload []byte
}

// Next returns the offset of the sequenced record that follows r.
func (r Record) Next() int64 { return r.Seq + int64(r.Size) }
