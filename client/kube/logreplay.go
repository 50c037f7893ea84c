package kube

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tether-ci/tether/protocol"
)

// logConn stands in for the shim of a terminated container: it answers
// the session's resume command from the container's log (pods/log), which
// holds every record the shim wrote, attached or not, unless the kubelet
// rotated it. Commands other than resume are read and dropped: nobody is
// left to run them.
type logConn struct {
	cmdW   *io.PipeWriter
	out    *io.PipeReader
	outW   *io.PipeWriter
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// clean is set when the log was replayed to its end.
	clean func()
}

// logReplayer opens the container's log.
type logReplayer func(ctx context.Context) (io.ReadCloser, error)

// podLog returns a logReplayer for a container of a pod.
func podLog(cs kubernetes.Interface, ns, pod, container string) logReplayer {
	return func(ctx context.Context) (io.ReadCloser, error) {
		rc, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the log of container %s of pod %s/%s: %w", container, ns, pod, err)
		}
		return rc, nil
	}
}

// newLogConn returns a connection that replays the log open returns.
// clean is called when a replay reached the end of the log.
func newLogConn(ctx context.Context, open logReplayer, log *slog.Logger, clean func()) *logConn {
	cmdR, cmdW := io.Pipe()
	out, outW := io.Pipe()
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &logConn{cmdW: cmdW, out: out, outW: outW, cancel: cancel, done: make(chan struct{}), clean: clean}
	go func() {
		defer close(c.done)
		err := c.serve(lctx, cmdR, open, log)
		_ = cmdR.CloseWithError(err)
		_ = outW.CloseWithError(err)
	}()
	return c
}

// serve waits for the resume command, then replays.
func (c *logConn) serve(ctx context.Context, cmds io.Reader, open logReplayer, log *slog.Logger) error {
	cr := protocol.NewCommandReader(cmds)
	for {
		cmd, err := cr.Next()
		var cerr *protocol.CommandError
		if errors.As(err, &cerr) {
			continue
		}
		if err != nil {
			return err
		}
		if cmd.Cmd != protocol.CmdResume {
			continue
		}
		go func() { _, _ = io.Copy(io.Discard, cmds) }() // later commands: nobody runs them
		rc, err := open(ctx)
		if err != nil {
			return err
		}
		defer rc.Close()
		log.Info("the shim's container has ended; replaying its output from the container log", "from", cmd.From)
		if err := replay(rc, c.outW, cmd); err != nil {
			return err
		}
		c.clean()
		return io.EOF
	}
}

// replay writes the resume answer and the records from cmd.From found in
// the log to w. Lines of the log that are not records (the shim's stderr)
// and unsequenced records are skipped.
func replay(log io.Reader, w io.Writer, cmd protocol.Command) error {
	br := bufio.NewReaderSize(log, 4*protocol.MaxRecord)
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf []byte
	answered := false
	answer := func(r protocol.Resumed) error {
		r.Nonce = cmd.Nonce
		b, err := protocol.AppendUnsequenced(nil, protocol.TypeResumed, r)
		if err != nil {
			return err
		}
		answered = true
		_, err = bw.Write(b)
		return err
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Not a record (too long): skip to the end of the line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("read the container log: %w", err)
			}
			if !answered {
				// The log ends before cmd.From: nothing to replay.
				if err := answer(protocol.Resumed{From: cmd.From, End: cmd.From}); err != nil {
					return err
				}
			}
			return bw.Flush()
		}
		var rec protocol.Record
		rec, buf, err = protocol.Parse(line, buf)
		if err != nil || !rec.Type.Sequenced() || rec.Seq < cmd.From {
			continue
		}
		if !answered {
			if rec.Seq > cmd.From {
				if err := answer(protocol.Resumed{From: cmd.From, Oldest: rec.Seq,
					Error: fmt.Sprintf("the container log starts at offset %d (rotated by the kubelet)", rec.Seq)}); err != nil {
					return err
				}
				return bw.Flush()
			}
			if err := answer(protocol.Resumed{From: cmd.From, End: cmd.From}); err != nil {
				return err
			}
		}
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
}

// Read reads the replayed records.
func (c *logConn) Read(p []byte) (int, error) { return c.out.Read(p) }

// Write accepts commands (only resume has an effect).
func (c *logConn) Write(p []byte) (int, error) { return c.cmdW.Write(p) }

// Close ends the replay.
func (c *logConn) Close() error {
	c.once.Do(func() {
		c.cancel()
		_ = c.out.CloseWithError(errConnClosed)
		_ = c.cmdW.CloseWithError(errConnClosed)
	})
	<-c.done
	return nil
}
