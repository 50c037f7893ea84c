package stage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame types. A frame is its type (one byte), its payload's length (four
// bytes, big-endian) and the payload.
const (
	// FrameRequest (stage → agent) starts a stage: a Request
	// (Request.AppendBinary).
	FrameRequest = 'r'
	// FrameCancel (stage → agent) cancels the running stage: the payload
	// names the signal the stage process received ("SIGTERM").
	FrameCancel = 'c'
	// FrameQuit (cleanup → agent) ends the agent once its stage, if any,
	// ended; the agent answers with FrameExit 0.
	FrameQuit = 'q'
	// FrameDecline (agent → stage): the agent does not run this stage (its
	// settings differ from the agent's, say: the payload says why); the
	// stage process runs it itself.
	FrameDecline = 'd'
	// FrameStarted (agent → stage): a Started (Started.AppendBinary),
	// sent before the stage's job can reach the shim.
	FrameStarted = 's'
	// FrameStdout and FrameStderr (agent → stage) carry bytes for the
	// stage process's stdout and stderr.
	FrameStdout = 'o'
	FrameStderr = 'e'
	// FrameExit (agent → stage) ends the stage: the payload is the exit
	// code in decimal.
	FrameExit = 'x'
)

// MaxFrame is the largest payload a frame may carry.
const MaxFrame = 1 << 20

// Request is what a stage process sends the agent.
type Request struct {
	// Args are the stage process's arguments: `tether gitlab run`'s
	// flags, then the script's path and the stage's name.
	Args []string
	// Env is the stage process's environment (KEY=VALUE), as the runner
	// gave it.
	Env []string
	// Dir is the stage process's working directory.
	Dir string
}

// AppendBinary appends r's encoding to b: Args and Env as a count and
// that many strings, then Dir, each count and string length an unsigned
// varint (encoding/binary). A stage process encodes it without
// reflection, the runtime's cheapest way.
func (r Request) AppendBinary(b []byte) ([]byte, error) {
	b = appendStrings(b, r.Args)
	b = appendStrings(b, r.Env)
	return appendString(b, r.Dir), nil
}

// UnmarshalBinary decodes what AppendBinary encoded.
func (r *Request) UnmarshalBinary(b []byte) error {
	d := decoder{b: b}
	r.Args = d.strings()
	r.Env = d.strings()
	r.Dir = d.string()
	return d.end("request")
}

// Started says which job of the shim runs the stage and where in the
// shim's record stream it begins.
type Started struct {
	// Job is the ID of the stage's job in the shim.
	Job string
	// From is the stream offset the stage's records start at.
	From int64
}

// AppendBinary appends s's encoding to b: Job (its length an unsigned
// varint, then its bytes), then From as a varint.
func (s Started) AppendBinary(b []byte) ([]byte, error) {
	return binary.AppendVarint(appendString(b, s.Job), s.From), nil
}

// UnmarshalBinary decodes what AppendBinary encoded.
func (s *Started) UnmarshalBinary(b []byte) error {
	d := decoder{b: b}
	s.Job = d.string()
	s.From = d.varint()
	return d.end("started")
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// decoder reads the encodings of Request and Started; its first error
// sticks.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("cut short or malformed")

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errShort
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) strings() []string {
	n := d.uvarint()
	// Every string takes one byte at least: a count over the rest's
	// length is malformed (and must not size an allocation).
	if d.err != nil || n > uint64(len(d.b)) {
		if d.err == nil {
			d.err = errShort
		}
		return nil
	}
	ss := make([]string, 0, n)
	for range n {
		ss = append(ss, d.string())
	}
	return ss
}

func (d *decoder) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("trailing bytes")
	}
	if d.err != nil {
		return fmt.Errorf("decode the %s frame: %w", what, d.err)
	}
	return nil
}

// WriteFrame writes one frame of type typ with payload p to w, in one
// write.
func WriteFrame(w io.Writer, typ byte, p []byte) error {
	if len(p) > MaxFrame {
		return fmt.Errorf("write frame %q: payload of %d bytes is over the limit of %d", typ, len(p), MaxFrame)
	}
	buf := make([]byte, 5+len(p))
	buf[0] = typ
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(p)))
	copy(buf[5:], p)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write frame %q: %w", typ, err)
	}
	return nil
}

// WriteEncoded writes a frame whose payload is v's encoding (a Request or
// a Started), in one write.
func WriteEncoded(w io.Writer, typ byte, v interface {
	AppendBinary([]byte) ([]byte, error)
}) error {
	buf, err := v.AppendBinary(make([]byte, 5, 512))
	if err != nil {
		return fmt.Errorf("encode frame %q: %w", typ, err)
	}
	n := len(buf) - 5
	if n > MaxFrame {
		return fmt.Errorf("write frame %q: payload of %d bytes is over the limit of %d", typ, n, MaxFrame)
	}
	buf[0] = typ
	binary.BigEndian.PutUint32(buf[1:5], uint32(n))
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write frame %q: %w", typ, err)
	}
	return nil
}

// ReadFrame reads one frame from r. At the end of the stream before a
// frame begins it returns io.EOF; inside one, io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader) (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("read frame %q: payload of %d bytes is over the limit of %d", head[0], n, MaxFrame)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, fmt.Errorf("read frame %q: %w", head[0], err)
	}
	return head[0], p, nil
}

// FrameWriter is an io.Writer whose writes become frames of one type,
// each at most MaxFrame bytes.
type FrameWriter struct {
	W    io.Writer
	Type byte
}

// Write writes p as frames of w.Type.
func (w FrameWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), MaxFrame)]
		if err := WriteFrame(w.W, w.Type, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}
