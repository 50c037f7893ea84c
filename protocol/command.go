package protocol

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
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
	CmdMask   CommandKind = "mask"   // mask these values in all further script output
	CmdFile   CommandKind = "file"   // write (a chunk of) a file into the shim's --files-dir
)

// MaxFileChunk is the most file content one file command carries (before
// base64): with the JSON around it the command stays within MaxCommand.
const MaxFileChunk = 44 * 1024

// MinMaskLen is the shortest value the shim masks: shorter values would
// mask ordinary words and are too short to hide a secret safely.
const MinMaskLen = 8

// Reset is the byte that discards whatever precedes it on the current
// command line. Clients start every command with it, so a half-written
// line left by a client that died is dropped instead of glued to the next
// command.
const Reset = 0x18 // ASCII CAN

// MaxCommand is the longest command accepted in bytes: the text after the
// line's last Reset, without the newline.
const MaxCommand = 64 * 1024

// Command is one client command.
type Command struct {
	// Cmd is the command's kind.
	Cmd CommandKind `json:"cmd"`
	// ID identifies a CmdJob or a CmdCancel. The shim runs a job ID once
	// and acts on a cancel ID once: a client that cannot tell whether its
	// command arrived sends it again. (A second cancel with another ID, or
	// none, also stops the after-scripts.)
	ID string `json:"id,omitempty"`
	// Script is the script path for CmdRun.
	Script string `json:"script,omitempty"`
	// Scripts are the main scripts of a CmdJob, run in order until one fails.
	Scripts []string `json:"scripts,omitempty"`
	// After are the after-scripts of a CmdJob, always run.
	After []string `json:"after,omitempty"`
	// Argv is a program and its arguments a CmdJob runs as its one main
	// script, without a shell (an image with none runs it too): Argv[0] is
	// looked up on the scripts' PATH when it has no slash, as execvp(3)
	// does. It excludes Scripts; After may follow it.
	Argv []string `json:"argv,omitempty"`
	// Nonce is echoed in the answer to CmdPing and CmdResume.
	Nonce string `json:"nonce,omitempty"`
	// From is the offset CmdResume replays from.
	From int64 `json:"from,omitempty"`
	// Mask are secret values (CmdMask, or CmdJob before it runs) the shim
	// replaces with [MASKED] in every later script output, also
	// URL-encoded; each at least MinMaskLen bytes.
	Mask []string `json:"mask,omitempty"`
	// Path is the file a CmdFile writes (absolute, inside the shim's
	// --files-dir).
	Path string `json:"path,omitempty"`
	// Data is a CmdFile's chunk, base64 (standard encoding), at most
	// MaxFileChunk bytes decoded.
	Data string `json:"data,omitempty"`
	// Offset is where a CmdFile's chunk starts in the file: 0 starts the
	// file afresh, each later chunk must start where the previous ended.
	Offset int64 `json:"offset,omitempty"`
	// SHA256 (hex) marks a CmdFile's last chunk: the shim checks the whole
	// content against it, then moves the file into place atomically.
	SHA256 string `json:"sha256,omitempty"`
	// Mode is the file's permission bits (default 0700).
	Mode uint32 `json:"mode,omitempty"`
	// Remove are files (inside --files-dir) a CmdJob deletes once it ended.
	Remove []string `json:"remove,omitempty"`
	// Shell runs every script of a CmdJob or CmdRun (an absolute path in
	// the container), whatever their "#!" line says; "" keeps the shim's
	// choice (its --shell, else the script's "#!" interpreter, else its
	// default shell).
	Shell string `json:"shell,omitempty"`
	// GraceMS overrides the shim's grace period between TERM and KILL for
	// CmdCancel, in milliseconds (0 keeps the default).
	GraceMS int64 `json:"grace_ms,omitempty"`
	// AfterTimeoutMS is a CmdJob's after-scripts' budget in milliseconds
	// once the deadline stopped its main scripts, instead of the shim's
	// --after-timeout: 0 keeps the shim's, a negative value means the
	// after-scripts do not run after the deadline.
	AfterTimeoutMS int64 `json:"after_timeout_ms,omitempty"`
	// TimeoutMS is a CmdJob's own time limit in milliseconds, counted from
	// when its first script starts (0 = none): when it passes, the shim
	// stops the running script (TERM, grace, KILL) and runs none of the
	// job's remaining scripts, after-scripts included. The stopped
	// script's status error starts with JobTimeoutReason; the job record
	// follows as usual.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// EnvFile names a file inside the shim's --files-dir (delivered by
	// CmdFile before the job) holding variables for a CmdJob's scripts:
	// NAME=VALUE entries, each ended by a NUL byte (as /proc/PID/environ).
	// The scripts get them on top of the shim's environment (a name in
	// both takes the file's value). The shim reads the file when the job
	// starts and never echoes or logs its content; list it in Remove so
	// it is deleted when the job ended. This is how a pod that was started
	// before its job (a warm pod) gets the job's variables without a
	// Secret.
	EnvFile string `json:"env_file,omitempty"`
	// DeadlineMS sets the shim's deadline (tether-shim --deadline) to this
	// many milliseconds after a CmdJob is received (0 = keep the shim's):
	// the same deadline, with the same after-scripts' budget and final
	// record, as one given at the shim's start. A job ID the shim already
	// received does not move it.
	DeadlineMS int64 `json:"deadline_ms,omitempty"`
	// TTLMS sets the shim's time to live to this many milliseconds after
	// a CmdJob is received (0 = keep the TTL of the pod's annotation):
	// from then on the annotation file is no longer read. A job ID the
	// shim already received does not move it.
	TTLMS int64 `json:"ttl_ms,omitempty"`
	// Stderr says where the stderr of a CmdJob's or CmdRun's scripts
	// goes: "" or StderrMerged into the same pipe as their stdout (one
	// stream, in the order written: o, p and d records), StderrSeparate
	// into a pipe of its own, sent as TypeStderr and TypeStderrPartial
	// records (protocol 3). A shim older than the field ignores it and
	// merges.
	Stderr string `json:"stderr,omitempty"`
}

// Values of Command.Stderr.
const (
	// StderrMerged gives a script one pipe for stdout and stderr (the
	// default): their order is kept.
	StderrMerged = "merged"
	// StderrSeparate gives a script's stderr a pipe of its own, sent in
	// stderr records.
	StderrSeparate = "separate"
)

// JobTimeoutReason starts the status error of a script the shim stopped
// because its job's own timeout (Command.TimeoutMS) passed.
const JobTimeoutReason = "the job's timeout_ms passed"

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
	// json.Unmarshal, unlike a json.Decoder, rejects anything after the
	// object (a Decoder's More() reports a stray '}' or ']' as no more).
	if err := json.Unmarshal(line, &c); err != nil {
		return Command{}, fmt.Errorf("command is not a valid JSON object: %w", err)
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
		if len(c.Argv) > 0 {
			if len(c.Scripts) > 0 {
				return errors.New(`job command has both "argv" and "scripts": argv is the job's one main script`)
			}
			if c.Argv[0] == "" {
				return errors.New(`job command's "argv" has an empty program name`)
			}
		} else if len(c.Scripts)+len(c.After) == 0 {
			return errors.New(`job command needs "scripts", "argv" or "after"`)
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
	case CmdFile:
		if c.Path == "" || !strings.HasPrefix(c.Path, "/") {
			return fmt.Errorf(`file command needs an absolute "path", got %q`, c.Path)
		}
		if c.Offset < 0 {
			return fmt.Errorf("file offset %d is negative", c.Offset)
		}
		if len(c.Data) > base64.StdEncoding.EncodedLen(MaxFileChunk) {
			return fmt.Errorf("file chunk of %d base64 bytes is larger than %d bytes decoded", len(c.Data), MaxFileChunk)
		}
		if c.SHA256 != "" && len(c.SHA256) != 64 {
			return fmt.Errorf("file sha256 %q is not 64 hex digits", c.SHA256)
		}
		if c.Mode > 0o777 {
			return fmt.Errorf("file mode %o has bits beyond 0777", c.Mode)
		}
	case CmdMask:
		if len(c.Mask) == 0 {
			return errors.New(`mask command needs "mask" values`)
		}
	case CmdCancel, CmdPing, CmdExit:
	case "":
		return errors.New(`command has no "cmd"`)
	default:
		return fmt.Errorf("unknown command %q (known: run, job, cancel, ping, resume, exit, mask, file)", c.Cmd)
	}
	for i, v := range c.Mask {
		if len(v) < MinMaskLen {
			return fmt.Errorf("mask value %d is %d bytes: values shorter than %d bytes are too short to mask safely", i, len(v), MinMaskLen)
		}
	}
	if c.Shell != "" && !strings.HasPrefix(c.Shell, "/") {
		return fmt.Errorf(`shell %q is not an absolute path: send the shell's full path inside the container`, c.Shell)
	}
	if c.EnvFile != "" && !strings.HasPrefix(c.EnvFile, "/") {
		return fmt.Errorf(`env_file %q is not an absolute path inside the shim's files directory`, c.EnvFile)
	}
	if c.EnvFile != "" && c.Cmd != CmdJob {
		return errors.New(`env_file belongs to a job command`)
	}
	if c.DeadlineMS < 0 || c.TTLMS < 0 {
		return fmt.Errorf("deadline_ms %d and ttl_ms %d must not be negative", c.DeadlineMS, c.TTLMS)
	}
	if c.GraceMS < 0 {
		return fmt.Errorf("grace_ms %d is negative", c.GraceMS)
	}
	switch {
	case c.Stderr != "" && c.Stderr != StderrMerged && c.Stderr != StderrSeparate:
		return fmt.Errorf(`stderr %q is neither %q nor %q`, c.Stderr, StderrMerged, StderrSeparate)
	case c.Stderr != "" && c.Cmd != CmdJob && c.Cmd != CmdRun:
		return errors.New(`stderr belongs to a job or run command`)
	}
	return nil
}

// AppendCommand appends c as one command line (Reset, the command, newline).
// A run command whose path can be written plainly is written as the path.
func AppendCommand(dst []byte, c Command) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, fmt.Errorf("encode command: %w", err)
	}
	if c.Cmd == CmdRun && c.ID == "" && len(c.Scripts) == 0 && len(c.After) == 0 &&
		c.Nonce == "" && c.From == 0 && c.GraceMS == 0 && c.Shell == "" && c.Stderr == "" && plainPath(c.Script) {
		dst = append(dst, Reset)
		dst = append(dst, c.Script...)
		return append(dst, '\n'), nil
	}
	// JSON strings cannot carry bytes that are not UTF-8 (json.Marshal
	// would replace them), so such a command cannot be sent faithfully.
	for _, s := range append(append([]string{c.ID, c.Script, c.Nonce}, append(c.Scripts, c.After...)...), c.Argv...) {
		if !utf8.ValidString(s) {
			return dst, fmt.Errorf("encode command: %q is not valid UTF-8 and cannot be sent in a JSON command (only a plain script path may hold such bytes)", s)
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return dst, fmt.Errorf("encode command: %w", err)
	}
	dst = append(dst, Reset)
	dst = append(dst, b...)
	return append(dst, '\n'), nil
}

// plainPath reports whether a run command for path p can be sent as the
// plain line p: CommandReader and ParseCommand must give p back unchanged,
// so p cannot be blank (skipped), start with '{' (JSON), hold a newline or
// Reset, or end in '\r' (dropped as part of a CR LF).
func plainPath(p string) bool {
	return strings.TrimSpace(p) != "" && p[0] != '{' && !strings.ContainsAny(p, "\n\x18") &&
		!strings.HasSuffix(p, "\r")
}

// CommandReader splits the shim's stdin into commands.
type CommandReader struct {
	br *bufio.Reader
	// line holds the current line after its last Reset; raw the first
	// bytes of the whole line, for error messages.
	line, raw []byte
	// pending is a line (or its error) read together with a torn line and
	// returned by the call after the torn line's error.
	pending    []byte
	pendingErr error
	hasPending bool
	eof        bool
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
		var err error
		if r.hasPending {
			line, err, r.hasPending = r.pending, r.pendingErr, false
		} else {
			var torn *CommandError
			line, torn, err = r.readLine()
			if torn != nil {
				r.pending, r.pendingErr, r.hasPending = line, err, true
				return Command{}, torn
			}
		}
		if err != nil {
			return Command{}, err
		}
		if blank(line) {
			continue
		}
		c, err := ParseCommand(line)
		if err != nil {
			return Command{}, &CommandError{Input: clipString(line), Err: err}
		}
		return c, nil
	}
}

// readLine reads one line. It returns the part after the line's last Reset
// without the newline, and, when the text before that Reset is not blank, a
// *CommandError about the torn line it discarded. Over-long lines and a
// torn last line come back as a *CommandError in err.
func (r *CommandReader) readLine() (line []byte, torn *CommandError, err error) {
	if r.eof {
		return nil, nil, io.EOF
	}
	r.line, r.raw = r.line[:0], r.raw[:0]
	var (
		read     int  // bytes of the line read so far
		size     int  // bytes after the last Reset, newline included
		text     bool // the bytes after the last Reset are not blank
		tornText bool // the bytes before the last Reset are not blank
		tornLen  int  // bytes before the last Reset
	)
	for {
		chunk, rerr := r.br.ReadSlice('\n')
		if len(r.raw) < 256 {
			r.raw = append(r.raw, chunk[:min(len(chunk), 256-len(r.raw))]...)
		}
		if i := bytes.LastIndexByte(chunk, Reset); i >= 0 {
			tornText = tornText || text || !blankOrReset(chunk[:i])
			tornLen = read + i
			r.line, size, text = r.line[:0], 0, false
			read += i + 1
			chunk = chunk[i+1:]
		}
		read += len(chunk)
		size += len(chunk)
		text = text || !blank(chunk)
		if size <= MaxCommand+1 {
			r.line = append(r.line, chunk...)
		}
		if tornText && torn == nil && rerr != bufio.ErrBufferFull {
			torn = &CommandError{
				Input: clipString(bytes.TrimSpace(bytes.TrimLeft(r.raw[:min(len(r.raw), tornLen)], "\x18"))),
				Err:   errors.New("discarded a torn command line left by a client that disconnected"),
			}
		}
		switch {
		case rerr == nil:
			if size > MaxCommand+1 {
				return nil, torn, &CommandError{Input: clipString(r.line[:min(len(r.line), 64)]), Err: fmt.Errorf("command line longer than %d bytes", MaxCommand)}
			}
			return r.line[:len(r.line)-1], torn, nil
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case errors.Is(rerr, io.EOF):
			r.eof = true
			if text {
				return nil, torn, &CommandError{Input: clipString(bytes.TrimSpace(r.line[:min(len(r.line), 256)])), Err: errors.New("discarded a command line without a newline at the end of input")}
			}
			return nil, torn, io.EOF
		default:
			return nil, torn, fmt.Errorf("read commands: %w", rerr)
		}
	}
}

// blank reports whether b holds only white space; blank lines are skipped.
func blank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// blankOrReset reports whether b holds only white space and Reset bytes:
// text before a Reset that is no torn command (a client may send Reset
// twice).
func blankOrReset(b []byte) bool {
	return len(bytes.TrimFunc(b, func(r rune) bool { return r == Reset || unicode.IsSpace(r) })) == 0
}

func clipString(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
