package dockerengine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// detachKeys replaces the engine's default detach sequence (ctrl-p,ctrl-q),
// which would otherwise end the attach if those bytes appeared in a command.
// ctrl-@ is a NUL byte, which no command line contains.
const detachKeys = "ctrl-@"

// Stream is one hijacked connection of the Engine API carrying a
// container's or exec session's stdio without a TTY: Read returns stdout,
// Write feeds stdin (when stdin is attached). Stderr frames are copied to the
// writer given when the stream was opened.
type Stream struct {
	conn   net.Conn
	br     *bufio.Reader
	stderr io.Writer

	readMu    sync.Mutex // Read is not meant to be concurrent; this keeps frames intact if it is
	remaining uint32     // unread bytes of the current stdout frame
	hdr       [8]byte
}

// Attach attaches to the stdout and stderr (and stdin, if stdin is set) of
// the running container id. It streams from now on (no earlier output).
// stderr receives the container's stderr; nil discards it. ctx bounds the
// handshake only; close the stream to detach.
//
// Podman closes a container's stdin when an attach that included stdin
// ends, even if the container was created with StdinOnce false (Docker
// keeps it open); a stdout-only attach leaves stdin alone on both.
func (c *Client) Attach(ctx context.Context, id string, stdin bool, stderr io.Writer) (*Stream, error) {
	q := url.Values{"stream": {"1"}, "stdout": {"1"}, "stderr": {"1"}}
	if stdin {
		q.Set("stdin", "1")
		q.Set("detachKeys", detachKeys)
	}
	s, err := c.hijack(ctx, "/containers/"+url.PathEscape(id)+"/attach", q, nil, stderr)
	if err != nil {
		return nil, fmt.Errorf("attach to container %s: %w", ShortID(id), err)
	}
	return s, nil
}

// Exec runs cmd in the running container id with stdin, stdout and stderr
// attached and returns the stream; the process's stdin closes when the
// stream is closed. stderr receives the process's stderr; nil discards it.
// ctx bounds the setup only.
func (c *Client) Exec(ctx context.Context, id string, cmd []string, stderr io.Writer) (*Stream, error) {
	var created struct {
		ID string `json:"Id"`
	}
	cfg := map[string]any{
		"AttachStdin": true, "AttachStdout": true, "AttachStderr": true,
		"Tty": false, "DetachKeys": detachKeys, "Cmd": cmd,
	}
	if err := c.doJSON(ctx, http.MethodPost, "/containers/"+url.PathEscape(id)+"/exec", nil, cfg, &created); err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", ShortID(id), err)
	}
	s, err := c.hijack(ctx, "/exec/"+url.PathEscape(created.ID)+"/start", nil, []byte(`{"Detach":false,"Tty":false}`), stderr)
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", ShortID(id), err)
	}
	return s, nil
}

// hijack sends a POST that the engine answers by switching the connection
// to a raw stdio stream.
func (c *Client) hijack(ctx context.Context, path string, q url.Values, body []byte, stderr io.Writer) (*Stream, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(http.MethodPost, c.url(path, q), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	// Bound the handshake by ctx, then clear the deadline for streaming.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	br := bufio.NewReaderSize(conn, 64<<10)
	resp, err := handshake(conn, br, req)
	if !stop() {
		conn.Close()
		return nil, context.Cause(ctx)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		err := readAPIError(resp, http.MethodPost, path)
		conn.Close()
		return nil, err
	}
	return &Stream{conn: conn, br: br, stderr: stderr}, nil
}

// handshake writes the request and reads the answer's header.
func handshake(conn net.Conn, br *bufio.Reader, req *http.Request) (*http.Response, error) {
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("send request: %w", err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("read the engine's answer: %w", err)
	}
	return resp, nil
}

// Stream types of the multiplexed attach stream's frame headers.
const (
	streamStdin  = 0
	streamStdout = 1
	streamStderr = 2
)

// Read reads the container's stdout. Stderr frames met on the way are
// copied to the stderr writer. io.EOF means the engine ended the attach
// (usually: the container stopped).
func (a *Stream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	a.readMu.Lock()
	defer a.readMu.Unlock()
	for a.remaining == 0 {
		if _, err := io.ReadFull(a.br, a.hdr[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, fmt.Errorf("attach stream ended inside a frame header: %w", err)
			}
			return 0, err
		}
		size := binary.BigEndian.Uint32(a.hdr[4:])
		switch a.hdr[0] {
		case streamStdout:
			a.remaining = size
		case streamStderr, streamStdin:
			w := a.stderr
			if a.hdr[0] == streamStdin {
				w = io.Discard
			}
			if _, err := io.CopyN(w, a.br, int64(size)); err != nil {
				return 0, fmt.Errorf("read a stderr frame of the attach stream: %w", err)
			}
		default:
			return 0, fmt.Errorf("attach stream: unknown frame type %d (is the container running with a TTY?)", a.hdr[0])
		}
	}
	if uint32(len(p)) > a.remaining {
		p = p[:a.remaining]
	}
	n, err := a.br.Read(p)
	a.remaining -= uint32(n)
	if errors.Is(err, io.EOF) && a.remaining > 0 {
		err = fmt.Errorf("attach stream ended inside a frame: %w", io.ErrUnexpectedEOF)
	}
	return n, err
}

// Write writes to the container's stdin.
func (a *Stream) Write(p []byte) (int, error) { return a.conn.Write(p) }

// Close ends the stream (an attached container keeps running).
func (a *Stream) Close() error { return a.conn.Close() }
