package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// CommandKind names a client command.
type CommandKind string

// Commands the shim understands.
const (
	CmdRun    CommandKind = "run"    // run one script (a plain line means the same)
	CmdJob    CommandKind = "job"    // run scripts with CI job semantics, then after-scripts
	CmdCancel CommandKind = "cancel" // stop the running script and the rest of the job
	CmdPing   CommandKind = "ping"   // prove the client is alive; answered by an alive record
	CmdResume CommandKind = "resume" // replay records from an offset; answered by a resumed record
	CmdExit   CommandKind = "exit"   // exit once everything queued has run
)

// Reset is the byte that discards whatever precedes it on the current
// command line. Clients start every command with it, so a half-written
// line left by a client that died is dropped instead of glued to the next
// command.
const Reset = 0x18 // ASCII CAN

// MaxCommand is the longest command line accepted, newline excluded.
const MaxCommand = 64 * 1024

// Command is one client command.
type Command struct {
	// Cmd is the command's kind.
	Cmd CommandKind `json:"cmd"`
	// ID identifies a CmdJob. The shim runs a job ID once: a client that
	// cannot tell whether its job command arrived sends it again.
	ID string `json:"id,omitempty"`
	// Script is the script path for CmdRun.
	Script string `json:"script,omitempty"`
	// Scripts are the main scripts of a CmdJob, run in order until one fails.
	Scripts []string `json:"scripts,omitempty"`
	// After are the after-scripts of a CmdJob, always run.
	After []string `json:"after,omitempty"`
	// Nonce is echoed in the answer to CmdPing and CmdResume.
	Nonce string `json:"nonce,omitempty"`
	// From is the offset CmdResume replays from.
	From int64 `json:"from,omitempty"`
	// GraceMS overrides the shim's grace period between TERM and KILL for
	// CmdCancel, in milliseconds (0 keeps the default).
	GraceMS int64 `json:"grace_ms,omitempty"`
}

// CommandError is a command line the shim could not accept.
type CommandError struct {
	// Input is the offending line (possibly truncated).
	Input string
	// Err says what was wrong.
	Err error
}

func (e *CommandError) Error() string { return e.Err.Error() }
func (e *CommandError) Unwrap() error { return e.Err }

// ParseCommand parses one command line (without its newline, after Reset
// handling). A line starting with '{' is a JSON command; any other line is
// the path of a script to run.
func ParseCommand(line []byte) (Command, error) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) == 0 {
		return Command{}, errors.New("empty command")
	}
	if line[0] != '{' {
		return Command{Cmd: CmdRun, Script: string(line)}, nil
	}
	var c Command
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&c); err != nil {
		return Command{}, fmt.Errorf("command is not valid JSON: %w", err)
	}
	if dec.More() {
		return Command{}, errors.New("command has data after its JSON object")
	}
	return c, c.Validate()
}

// Validate checks that c is complete.
func (c Command) Validate() error {
	switch c.Cmd {
	case CmdRun:
		if c.Script == "" {
			return errors.New(`run command needs a "script"`)
		}
	case CmdJob:
		if len(c.Scripts)+len(c.After) == 0 {
			return errors.New(`job command needs "scripts" or "after"`)
		}
		for _, s := range append(append([]string{}, c.Scripts...), c.After...) {
			if s == "" {
				return errors.New("job command has an empty script path")
			}
		}
	case CmdResume:
		if c.From < 0 {
			return fmt.Errorf("resume offset %d is negative", c.From)
		}
	case CmdCancel, CmdPing, CmdExit:
	case "":
		return errors.New(`command has no "cmd"`)
	default:
		return fmt.Errorf("unknown command %q (known: run, job, cancel, ping, resume, exit)", c.Cmd)
	}
	if c.GraceMS < 0 {
		return fmt.Errorf("grace_ms %d is negative", c.GraceMS)
	}
	return nil
}

// AppendCommand appends c as one command line (Reset, the command, newline).
// A run command whose path can be written plainly is written as the path.
func AppendCommand(dst []byte, c Command) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, fmt.Errorf("encode command: %w", err)
	}
	dst = append(dst, Reset)
	if c.Cmd == CmdRun && c.GraceMS == 0 && c.Nonce == "" && plainPath(c.Script) {
		dst = append(dst, c.Script...)
		return append(dst, '\n'), nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return dst, fmt.Errorf("encode command: %w", err)
	}
	dst = append(dst, b...)
	return append(dst, '\n'), nil
}

func plainPath(p string) bool {
	return p != "" && p[0] != '{' && !strings.ContainsAny(p, "\n\r\x18")
}

// CommandReader splits the shim's stdin into commands.
type CommandReader struct {
	br      *bufio.Reader
	line    []byte
	pending []byte // the command after a torn line, returned by the next call
	hasNext bool
	eof     bool
}

// NewCommandReader returns a reader of commands from r.
func NewCommandReader(r io.Reader) *CommandReader {
	return &CommandReader{br: bufio.NewReaderSize(r, 4096)}
}

// Next returns the next command. A *CommandError concerns one line (torn,
// too long, invalid) and the reader stays usable. Blank lines are skipped.
// At the end of input it returns io.EOF; a final line without a newline is
// torn and reported as a *CommandError before io.EOF.
func (r *CommandReader) Next() (Command, error) {
	for {
		var line []byte
		if r.hasNext {
			line, r.hasNext = r.pending, false
		} else {
			l, err := r.readLine()
			if err != nil {
				return Command{}, err
			}
			line = l
			if i := bytes.LastIndexByte(line, Reset); i >= 0 {
				torn := bytes.TrimSpace(line[:i])
				line = line[i+1:]
				if len(torn) > 0 {
					r.pending, r.hasNext = line, true
					return Command{}, &CommandError{Input: clipString(torn), Err: errors.New("discarded a torn command line left by a client that disconnected")}
				}
			}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		c, err := ParseCommand(line)
		if err != nil {
			return Command{}, &CommandError{Input: clipString(line), Err: err}
		}
		return c, nil
	}
}

// readLine returns the next line without its newline. Over-long lines and a
// torn last line come back as *CommandError.
func (r *CommandReader) readLine() ([]byte, error) {
	if r.eof {
		return nil, io.EOF
	}
	r.line = r.line[:0]
	tooLong := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			if len(r.line)+len(chunk) > MaxCommand+1 {
				tooLong = true
				r.line = append(r.line[:0], chunk[:min(len(chunk), 64)]...)
			} else {
				r.line = append(r.line, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, &CommandError{Input: clipString(r.line), Err: fmt.Errorf("command line longer than %d bytes", MaxCommand)}
			}
			return r.line[:len(r.line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			r.eof = true
			rest := r.line
			if i := bytes.LastIndexByte(rest, Reset); i >= 0 {
				rest = rest[i+1:]
			}
			if rest = bytes.TrimSpace(rest); len(rest) > 0 {
				return nil, &CommandError{Input: clipString(rest), Err: errors.New("discarded a command line without a newline at the end of input")}
			}
			return nil, io.EOF
		default:
			return nil, fmt.Errorf("read commands: %w", err)
		}
	}
}

func clipString(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
