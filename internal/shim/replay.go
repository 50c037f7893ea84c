package shim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// replayStore keeps the sequenced record stream so a client that lost its
// connection can ask for it again (the kubelet's log API alone cannot be
// trusted: logs rotate at 10 MiB).
type replayStore interface {
	// Append adds whole records b, which continue the stream where the
	// previous Append ended (the first starts at offset 0).
	Append(b []byte) error
	// AppendFrom takes the next n bytes out of the pipe fd (they are
	// waiting there) and adds them to the stream, as Append would.
	AppendFrom(fd, n int) error
	// Oldest returns the oldest stream offset still retained.
	Oldest() int64
	// CopyRange writes the stored stream bytes [from, to) to w.
	CopyRange(w io.Writer, from, to int64) error
	// Kind names the store for the hello record.
	Kind() string
	// Close releases the store.
	Close() error
}

// newReplayStore returns the store cfg asks for: the spool file with
// --spool-dir, else the memory window, in pipes where the user's pipe
// limits allow (pipeStore), else in the heap (memoryStore).
func newReplayStore(cfg *Config) (replayStore, error) {
	if cfg.SpoolDir != "" {
		return newFileStore(cfg.SpoolDir)
	}
	if cfg.ReplayBytes > 0 {
		if ps, ok := newPipeStore(cfg.ReplayBytes); ok {
			return ps, nil
		}
	}
	return newMemoryStore(cfg.ReplayBytes), nil
}

// memoryStore keeps the last max bytes of the stream in a ring that grows
// on demand, so an idle shim stays small.
type memoryStore struct {
	max   int64
	ring  []byte
	start int64 // stream offset of the oldest retained byte
	end   int64 // stream offset after the newest byte
	null  int   // /dev/null, opened to drop output when max is 0
}

func newMemoryStore(max int64) *memoryStore {
	return &memoryStore{max: max}
}

func (m *memoryStore) Kind() string  { return "memory" }
func (m *memoryStore) Oldest() int64 { return m.start }
func (m *memoryStore) Close() error {
	if m.null > 0 {
		return syscall.Close(m.null)
	}
	return nil
}

func (m *memoryStore) Append(b []byte) error {
	if m.max <= 0 {
		m.end += int64(len(b))
		m.start = m.end
		return nil
	}
	m.grow(m.end - m.start + int64(len(b)))
	size := int64(len(m.ring))
	if int64(len(b)) > size {
		m.end += int64(len(b)) - size
		b = b[int64(len(b))-size:]
	}
	for len(b) > 0 {
		pos := m.end % size
		n := copy(m.ring[pos:], b)
		b = b[n:]
		m.end += int64(n)
	}
	if m.end-m.start > size {
		m.start = m.end - size
	}
	return nil
}

func (m *memoryStore) AppendFrom(fd, n int) error {
	if m.max <= 0 {
		m.end += int64(n)
		m.start = m.end
		return spliceToNull(fd, n, &m.null)
	}
	if int64(n) > m.max {
		// Only the last m.max bytes can stay: drop the rest first.
		drop := n - int(m.max)
		if err := discardFrom(fd, drop, func(b []byte) { m.end += int64(len(b)) }); err != nil {
			return err
		}
		m.start = m.end
		n -= drop
	}
	m.grow(m.end - m.start + int64(n))
	size := int64(len(m.ring))
	for n > 0 {
		pos := m.end % size
		chunk := m.ring[pos:min(size, pos+int64(n))]
		k, err := readWaiting(fd, chunk)
		if err != nil {
			return err
		}
		m.end += int64(k)
		n -= k
	}
	if m.end-m.start > size {
		m.start = m.end - size
	}
	return nil
}

// readWaiting reads into b from the pipe fd, whose bytes are already
// waiting there: a short read is the caller's to repeat, but no bytes at all
// is an error.
func readWaiting(fd int, b []byte) (int, error) {
	for {
		k, err := syscall.Read(fd, b)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, fmt.Errorf("read script output into the replay store: %w", err)
		case k <= 0:
			return 0, fmt.Errorf("read script output into the replay store: the pipe holds fewer than the %d bytes it held", len(b))
		}
		return k, nil
	}
}

// discardFrom reads n waiting bytes out of the pipe fd, handing each piece to
// seen.
func discardFrom(fd, n int, seen func([]byte)) error {
	var buf [16 << 10]byte
	for n > 0 {
		k, err := readWaiting(fd, buf[:min(n, len(buf))])
		if err != nil {
			return err
		}
		seen(buf[:k])
		n -= k
	}
	return nil
}

// grow enlarges the ring (up to max) so that need bytes fit, keeping the
// retained bytes at the positions their offsets map to.
func (m *memoryStore) grow(need int64) {
	size := int64(len(m.ring))
	if need <= size || size >= m.max {
		return
	}
	newSize := max(size*2, 64*1024)
	for newSize < need {
		newSize *= 2
	}
	newSize = min(newSize, m.max)
	ring := make([]byte, newSize)
	for off := m.start; off < m.end; {
		from := m.ring[off%size:]
		if rem := m.end - off; int64(len(from)) > rem {
			from = from[:rem]
		}
		to := off % newSize
		n := copy(ring[to:], from)
		off += int64(n)
	}
	m.ring = ring
}

func (m *memoryStore) CopyRange(w io.Writer, from, to int64) error {
	if from < m.start || to > m.end || from > to {
		return fmt.Errorf("replay range [%d, %d) outside retained [%d, %d)", from, to, m.start, m.end)
	}
	size := int64(len(m.ring))
	for from < to {
		pos := from % size
		chunk := m.ring[pos:min(size, pos+(to-from))]
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		from += int64(len(chunk))
	}
	return nil
}

// fileStore keeps the whole stream in a file (an emptyDir in a pod): disk,
// not memory, however much a job prints.
type fileStore struct {
	f   *os.File
	end int64
}

func newFileStore(dir string) (*fileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create spool directory %s: %w (use a writable --spool-dir, or omit it to replay from memory)", dir, err)
	}
	path := filepath.Join(dir, "records")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create spool file: %w (use a writable --spool-dir, or omit it to replay from memory)", err)
	}
	return &fileStore{f: f}, nil
}

func (s *fileStore) Kind() string  { return "file" }
func (s *fileStore) Oldest() int64 { return 0 }
func (s *fileStore) Close() error  { return s.f.Close() }

func (s *fileStore) Append(b []byte) error {
	n, err := s.f.WriteAt(b, s.end)
	s.end += int64(n)
	if err != nil {
		return fmt.Errorf("write spool file: %w", err)
	}
	return nil
}

func (s *fileStore) AppendFrom(fd, n int) error {
	var out int
	_ = withFd(s.f, func(u uintptr) { out = int(u) })
	for n > 0 {
		k, err := syscall.Splice(fd, nil, out, &s.end, n, 0)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("write spool file (splice): %w", err)
		case k <= 0:
			return fmt.Errorf("write spool file (splice): no progress with %d bytes waiting", n)
		}
		n -= int(k)
	}
	return nil
}

// withFd runs f with the file descriptor of file.
func withFd(file *os.File, f func(fd uintptr)) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(f)
}

func (s *fileStore) CopyRange(w io.Writer, from, to int64) error {
	if from < 0 || to > s.end || from > to {
		return fmt.Errorf("replay range [%d, %d) outside stored [0, %d)", from, to, s.end)
	}
	_, err := io.Copy(w, io.NewSectionReader(s.f, from, to-from))
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// spliceToNull drops n waiting bytes from the pipe fd without copying
// them, opening /dev/null into *null the first time.
func spliceToNull(fd, n int, null *int) error {
	if *null <= 0 {
		f, err := syscall.Open(os.DevNull, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("drop script output: %w", os.NewSyscallError("open "+os.DevNull, err))
		}
		*null = f
	}
	for n > 0 {
		k, err := syscall.Splice(fd, nil, *null, nil, n, 0)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("drop script output: %w", os.NewSyscallError("splice", err))
		case k <= 0:
			return errors.New("drop script output: the pipe holds fewer bytes than it reported")
		}
		n -= int(k)
	}
	return nil
}
