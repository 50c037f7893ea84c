package attachserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
)

// Container is one long-running process standing in for a container: the
// attach sessions share its stdin, and its stdout and stderr are fanned out
// to whoever is attached at the moment, like a container runtime does.
// Output written while nobody is attached is dropped (it went to the
// container log only).
type Container struct {
	// Namespace, Pod and Name identify the container in API paths.
	Namespace, Pod, Name string

	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu       sync.Mutex
	outs     map[*sink]struct{}
	attaches int
	exitCode int
	done     chan struct{} // closed once the process exited and its output was delivered
	log      *logTail
	// logs is the container log: stdout and stderr lines as the runtime
	// would write them (whole lines, in the order they completed).
	logs *containerLog
}

// sink is one attach session's output side.
type sink struct {
	out, err io.Writer
	broken   chan struct{} // closed when a write to it failed
	once     sync.Once
}

func (s *sink) fail() { s.once.Do(func() { close(s.broken) }) }

// start starts cmd with pipes for its standard streams.
func startContainer(ns, pod, name string, cmd *exec.Cmd, logLimit int) (*Container, error) {
	c := &Container{Namespace: ns, Pod: pod, Name: name, cmd: cmd,
		outs: map[*sink]struct{}{}, done: make(chan struct{}), log: newLogTail(64 * 1024),
		logs: &containerLog{limit: logLimit}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("container %s: stdin pipe: %w", name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("container %s: stdout pipe: %w", name, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("container %s: stderr pipe: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("container %s: start %s: %w", name, cmd.Path, err)
	}
	c.stdin = stdin
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.fanOut(stdout, func(s *sink) io.Writer { return s.out }, nil, 0) }()
	go func() { defer wg.Done(); c.fanOut(stderr, func(s *sink) io.Writer { return s.err }, c.log, 1) }()
	go func() {
		wg.Wait()
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		} else if err != nil {
			code = 255
		}
		c.mu.Lock()
		c.exitCode = code
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// fanOut copies r to the writer pick selects from every attached sink, and
// to tail if set.
func (c *Container) fanOut(r io.Reader, pick func(*sink) io.Writer, tail *logTail, stream int) {
	buf := make([]byte, 32*1024)
	defer c.logs.flush(stream)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.logs.write(stream, buf[:n])
			if tail != nil {
				tail.Write(buf[:n])
			}
			c.mu.Lock()
			sinks := make([]*sink, 0, len(c.outs))
			for s := range c.outs {
				sinks = append(sinks, s)
			}
			c.mu.Unlock()
			for _, s := range sinks {
				w := pick(s)
				if w == nil {
					continue
				}
				if _, werr := w.Write(buf[:n]); werr != nil {
					c.detach(s)
					s.fail()
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *Container) detach(s *sink) {
	c.mu.Lock()
	delete(c.outs, s)
	c.mu.Unlock()
}

// attach serves one attach session until the client's stdin ends (closing
// stdin detaches, as with a runtime's stdinOnce=false attach), ctx ends, a
// write to the client fails, or the process exits (after all of its output
// was delivered).
func (c *Container) attach(ctx context.Context, in io.Reader, out, errw io.Writer) error {
	select {
	case <-c.done:
		return fmt.Errorf("container %q is not running", c.Name)
	default:
	}
	s := &sink{out: out, err: errw, broken: make(chan struct{})}
	c.mu.Lock()
	c.outs[s] = struct{}{}
	c.attaches++
	c.mu.Unlock()
	defer c.detach(s)
	stdinDone := make(chan struct{})
	if in != nil {
		go func() {
			defer close(stdinDone)
			_, _ = io.Copy(c.stdin, in)
		}()
	}
	select {
	case <-stdinDone:
	case <-ctx.Done():
	case <-s.broken:
	case <-c.done:
	}
	return nil
}

// Running reports whether the process is still running.
func (c *Container) Running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Done is closed when the process has exited.
func (c *Container) Done() <-chan struct{} { return c.done }

// ExitCode is the process's exit status (128+N for signal N); valid once
// Done is closed.
func (c *Container) ExitCode() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitCode
}

// Attaches counts the attach sessions served so far.
func (c *Container) Attaches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attaches
}

// Attached counts the attach sessions open now.
func (c *Container) Attached() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.outs)
}

// Stderr returns the last 64 KiB the process wrote to stderr.
func (c *Container) Stderr() string { return c.log.String() }

// Kill sends SIGKILL to the process and waits for it to end.
func (c *Container) Kill() {
	if c.Running() && c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
	}
	<-c.done
}

// Log returns the container log (what pods/log serves): the lines of both
// streams in the order they completed.
func (c *Container) Log() []byte { return c.logs.bytes(-1) }

// StreamLog returns the lines of one stream of the container log (0
// stdout, 1 stderr), what pods/log serves for stream=Stdout or Stderr.
func (c *Container) StreamLog(stream int) []byte { return c.logs.bytes(stream) }

// containerLog is a container log: complete lines of both streams, like a
// runtime's log file, each tagged with its stream. With a limit it drops
// its oldest lines ("rotation").
type containerLog struct {
	mu      sync.Mutex
	limit   int
	lines   []logLine
	size    int
	partial [2][]byte
}

// logLine is one line of a container log.
type logLine struct {
	stream int
	text   []byte
}

func (l *containerLog) write(stream int, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial[stream] = append(l.partial[stream], p...)
	for {
		i := bytes.IndexByte(l.partial[stream], '\n')
		if i < 0 {
			return
		}
		l.add(stream, l.partial[stream][:i+1])
		l.partial[stream] = append(l.partial[stream][:0], l.partial[stream][i+1:]...)
	}
}

// flush ends a stream: its unterminated last line goes to the log.
func (l *containerLog) flush(stream int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial[stream]) > 0 {
		l.add(stream, append(l.partial[stream], '\n'))
		l.partial[stream] = nil
	}
}

// add appends a line and drops whole lines from the start while the log
// exceeds its limit. l.mu is held.
func (l *containerLog) add(stream int, text []byte) {
	l.lines = append(l.lines, logLine{stream: stream, text: bytes.Clone(text)})
	l.size += len(text)
	for l.limit > 0 && l.size > l.limit {
		l.size -= len(l.lines[0].text)
		l.lines = l.lines[1:]
	}
}

// bytes returns the lines of stream, or of both streams for -1.
func (l *containerLog) bytes(stream int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b []byte
	for _, ln := range l.lines {
		if stream < 0 || ln.stream == stream {
			b = append(b, ln.text...)
		}
	}
	return b
}

// logTail keeps the last bytes written to it.
type logTail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newLogTail(max int) *logTail { return &logTail{max: max} }

func (l *logTail) Write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - l.max; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}
