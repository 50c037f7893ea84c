package stage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Frame types. A frame is its type (one byte), its payload's length (four
// bytes, big-endian) and the payload.
const (
	// FrameRequest (stage → agent) starts a stage: a JSON Request.
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
	// FrameStarted (agent → stage): a JSON Started, sent before the
	// stage's job can reach the shim.
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
	Args []string `json:"args"`
	// Env is the stage process's environment (KEY=VALUE), as the runner
	// gave it.
	Env []string `json:"env"`
	// Dir is the stage process's working directory.
	Dir string `json:"dir"`
}

// Started says which job of the shim runs the stage and where in the
// shim's record stream it begins.
type Started struct {
	// Job is the ID of the stage's job in the shim.
	Job string `json:"job"`
	// From is the stream offset the stage's records start at.
	From int64 `json:"from"`
}

// WriteFrame writes one frame of type typ with payload p to w.
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

// WriteJSON writes a frame whose payload is v in JSON.
func WriteJSON(w io.Writer, typ byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame %q: %w", typ, err)
	}
	return WriteFrame(w, typ, b)
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
