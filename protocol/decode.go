package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrMalformed is wrapped by every error about a line that is not a valid
// record. The Decoder stays usable after it: the line has been consumed.
var ErrMalformed = errors.New("malformed record")

// ErrTruncated is returned when the stream ends in the middle of a record.
var ErrTruncated = errors.New("stream ended inside a record")

// ErrUnknownType is wrapped when a record has a type this version does not
// know, which means the shim speaks a newer protocol.
var ErrUnknownType = errors.New("unknown record type")

// Parse decodes one record line, which must end in its only newline. The
// returned payload may alias line (output records without escapes) or buf,
// which it reuses; both stay valid until either is modified. A TypeBlock
// record's line is its header only: Parse returns it with a nil Payload and
// the Size of the whole record, whose payload (Size minus the header's
// length, less one) and final newline follow the header in the stream.
func Parse(line, buf []byte) (Record, []byte, error) {
	if i := bytes.IndexByte(line, '\n'); i >= 0 && i != len(line)-1 {
		return Record{}, buf, fmt.Errorf("%w: %q holds more than one line", ErrMalformed, clip(line))
	}
	var rec Record
	buf, err := parse(&rec, line, buf)
	if err != nil {
		return Record{}, buf, err
	}
	return rec, buf, nil
}

// parse is Parse for a line known to hold no newline before its last byte
// (the Decoder's lines). It fills *rec (which holds garbage after an
// error) rather than returning a Record: results that big do not fit in
// registers, and the copies cost as much as the parsing.
func parse(rec *Record, line, buf []byte) ([]byte, error) {
	n := len(line)
	if n == 0 || line[n-1] != '\n' {
		return buf, fmt.Errorf("%w: no trailing newline", ErrMalformed)
	}
	if n > MaxRecord {
		return buf, fmt.Errorf("%w: %d bytes exceeds the %d-byte limit", ErrMalformed, n, MaxRecord)
	}
	if n < 5 || line[1] != ' ' {
		return buf, fmt.Errorf("%w: %q does not start with \"TYPE SEQ \"", ErrMalformed, clip(line))
	}
	t := Type(line[0])
	if !t.Known() {
		return buf, fmt.Errorf("%w %s: %w (is the shim newer than this client?)", ErrMalformed, t, ErrUnknownType)
	}
	*rec = Record{Type: t, Size: n, Seq: Unsequenced}
	// The sequence field: a decimal offset without leading zeros, or "-"
	// for unsequenced types; then one space. line[n-1] is the newline, so
	// the scan always stops inside line.
	i := 2
	if t.Sequenced() {
		for line[i] >= '0' && line[i] <= '9' {
			i++
		}
		switch {
		case i == 2 && line[i] == ' ':
			return buf, fmt.Errorf("%w: %q has no sequence field", ErrMalformed, clip(line))
		case line[i] != ' ':
			return buf, fmt.Errorf("%w: %q: sequence is not a decimal number followed by a space", ErrMalformed, clip(line))
		case line[2] == '0' && i > 3:
			return buf, fmt.Errorf("%w: %q: sequence has a leading zero", ErrMalformed, clip(line))
		case i-2 > 18 && !fitsInt64(line[2:i]):
			return buf, fmt.Errorf("%w: %q: sequence out of range", ErrMalformed, clip(line))
		}
		var seq int64 // at most 19 digits that fit: no overflow
		for _, c := range line[2:i] {
			seq = seq*10 + int64(c-'0')
		}
		rec.Seq = seq
	} else {
		if line[2] != '-' || line[3] != ' ' {
			end := 2 + max(bytes.IndexByte(line[2:n-1], ' '), 0)
			return buf, fmt.Errorf("%w: unsequenced %s record has sequence %q, want \"-\"", ErrMalformed, t, line[2:end])
		}
		i = 3
	}
	payload := line[i+1 : n-1]
	switch t {
	case TypeBlock:
		size, err := blockLength(payload)
		if err != nil {
			return buf, fmt.Errorf("%w: %q: %w", ErrMalformed, clip(line), err)
		}
		if n+size+1 > MaxRecord {
			return buf, fmt.Errorf("%w: %q: a block of %d bytes exceeds the %d-byte record limit", ErrMalformed, clip(line), n+size+1, MaxRecord)
		}
		rec.Size = n + size + 1
		rec.Payload = nil
	case TypeOutput, TypePartial, TypeStderr, TypeStderrPartial:
		complete := t == TypeOutput || t == TypeStderr
		if bytes.IndexByte(payload, '\\') < 0 {
			if complete {
				rec.Payload = line[i+1:]
			} else {
				rec.Payload = payload
			}
			return buf, nil
		}
		var err error
		buf, err = appendUnescaped(buf[:0], payload)
		if err != nil {
			return buf, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if complete {
			buf = append(buf, '\n')
		}
		rec.Payload = buf
	default:
		if len(payload) < 2 || payload[0] != '{' || payload[len(payload)-1] != '}' {
			return buf, fmt.Errorf("%w: %s record payload is not a JSON object", ErrMalformed, t)
		}
		rec.Payload = payload
	}
	return buf, nil
}

// blockLength parses a block header's length field: a decimal number
// from 1 to MaxRecord without a leading zero.
func blockLength(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 5 || b[0] == '0' {
		return 0, errors.New("block length is not a number from 1 to 16384 without a leading zero")
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("block length is not a decimal number")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// fitsInt64 reports whether the decimal digits in b (no leading zeros) are at
// most math.MaxInt64.
func fitsInt64(b []byte) bool {
	const limit = "9223372036854775807"
	return len(b) < len(limit) || (len(b) == len(limit) && string(b) <= limit)
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// Decoder reads records from a stream.
type Decoder struct {
	r io.Reader
	// rbuf[start:end] is read but not yet returned; rbuf[start:scanned]
	// is known to hold no newline.
	rbuf                []byte
	start, end, scanned int
	// err is the reader's error, returned once the buffered lines are.
	err error
	// buf holds unescaped payloads.
	buf []byte
	// skipping is set after an over-long line, until its end is consumed.
	skipping bool
	// filled is set when a read filled the whole (empty) buffer: the
	// stream is fast, and the buffer grows once it is empty again.
	filled bool
	// busy is set when a read since the buffer was last empty returned at
	// least decoderBufSize/4 bytes. A big buffer that empties without it
	// decoderShrinkAfter times in a row shrinks back (the stream slowed
	// down), so an idle or slow connection holds the small buffer only.
	busy bool
	// quiet counts the times in a row the buffer emptied without busy.
	quiet int
	// resync is set while the stream position may be inside a record
	// (see Resync).
	resync bool
	// beforeFill runs before every fill (see BeforeFill).
	beforeFill func() error
}

// decoderBufSize is the first read buffer; a fast stream's buffer grows to
// decoderBigBufSize (fewer, bigger reads) and shrinks back when the stream
// slows down (the buffer is per connection: an idle or slow one keeps the
// small size).
const (
	decoderBufSize    = MaxRecord
	decoderBigBufSize = 16 * MaxRecord
)

// decoderShrinkAfter is how many times in a row a big buffer must empty
// without a big read before it shrinks. A fast stream's reads are now and
// then small (the writer was between two writes): shrinking at the first
// one made it grow again at the next big read, a 256 KiB allocation per
// round and the garbage collector's work with it.
const decoderShrinkAfter = 16

// NewDecoder returns a decoder reading from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: r, rbuf: make([]byte, decoderBufSize)}
}

// Next returns the next record. Errors wrapping ErrMalformed concern one
// line only; the caller may call Next again. ErrTruncated and read errors
// end the stream; a stream that ends on a record boundary returns io.EOF.
//
// A TypeBlock record's Payload is its raw bytes, taken whole from the
// stream by the length in its header, newlines and all, unless the decoder
// is resynchronising (see Resync).
func (d *Decoder) Next() (Record, error) {
	for {
		more := false // a block's header is buffered, not all of its payload
		if i := bytes.IndexByte(d.rbuf[d.scanned:d.end], '\n'); i >= 0 {
			lineStart, lineEnd := d.start, d.scanned+i+1
			line := d.rbuf[lineStart:lineEnd]
			d.start, d.scanned = lineEnd, lineEnd
			if d.skipping {
				d.skipping = false
				continue
			}
			var rec Record
			var err error
			if d.buf, err = parse(&rec, line, d.buf); err != nil {
				return Record{}, err
			}
			if rec.Type != TypeBlock {
				return rec, nil
			}
			if d.resync {
				return Record{}, fmt.Errorf("%w: %q: a block header read while resynchronising; its payload is read as lines", ErrMalformed, clip(line))
			}
			if end := lineStart + rec.Size; end <= d.end {
				return d.takeBlock(rec, lineEnd, end)
			}
			d.start, d.scanned = lineStart, lineStart
			more = true
		}
		if !more {
			d.scanned = d.end
		}
		if d.err != nil {
			err := d.err
			torn := d.end > d.start || d.skipping
			d.start, d.end, d.scanned, d.skipping = 0, 0, 0, false
			if err == io.EOF {
				if torn {
					return Record{}, ErrTruncated
				}
				return Record{}, io.EOF
			}
			d.err = nil
			return Record{}, fmt.Errorf("read records: %w", err)
		}
		if !more && d.end-d.start == len(d.rbuf) {
			// A line longer than the buffer: report it once and drop it
			// up to its newline.
			d.start, d.end, d.scanned = 0, 0, 0
			if !d.skipping {
				d.skipping = true
				return Record{}, fmt.Errorf("%w: line longer than %d bytes", ErrMalformed, MaxRecord)
			}
			continue
		}
		d.fill()
	}
}

// takeBlock completes the block record rec, whose payload starts at
// rbuf[from] and whose final newline is rbuf[end-1], all buffered. Without
// that newline the block is malformed: only its header has been consumed.
func (d *Decoder) takeBlock(rec Record, from, end int) (Record, error) {
	if d.rbuf[end-1] != '\n' {
		return Record{}, fmt.Errorf("%w: block at offset %d does not end in a newline after its %d bytes", ErrMalformed, rec.Seq, end-1-from)
	}
	rec.Payload = d.rbuf[from : end-1]
	d.start, d.scanned = end, end
	return rec, nil
}

// Resync sets whether the decoder may be inside a record: a connection
// that starts anywhere in the stream reads a block's raw payload as lines,
// one of which may look like a block header. While on, a block header is an
// ErrMalformed error and its payload is not taken, so the decoder keeps
// reading line by line and always finds the next record that starts a line
// (every record, blocks included, ends in a newline). A client turns it off
// once it knows it stands on a record boundary (its resume answer).
func (d *Decoder) Resync(on bool) { d.resync = on }

// BeforeFill sets f to run each time the decoder is about to read from its
// reader, before it moves or replaces the bytes it holds: the payloads it
// returned stay valid until then, so f can still use them (a caller that
// writes block payloads from the decoder's buffer writes them there). An
// error from f ends the stream as a read error would.
func (d *Decoder) BeforeFill(f func() error) { d.beforeFill = f }

// fill reads more of the stream into rbuf, moving the unreturned bytes to
// its start when the end is reached.
func (d *Decoder) fill() {
	if d.beforeFill != nil {
		if err := d.beforeFill(); err != nil {
			d.err = err
			return
		}
	}
	if d.start == d.end {
		d.start, d.end, d.scanned = 0, 0, 0
		if d.busy {
			d.quiet = 0
		} else {
			d.quiet++
		}
		switch {
		case d.filled && len(d.rbuf) < decoderBigBufSize:
			d.rbuf = make([]byte, decoderBigBufSize)
		case d.quiet >= decoderShrinkAfter && len(d.rbuf) > decoderBufSize:
			d.rbuf = make([]byte, decoderBufSize)
		}
		d.filled, d.busy = false, false
	} else if d.end == len(d.rbuf) {
		n := copy(d.rbuf, d.rbuf[d.start:d.end])
		d.scanned -= d.start
		d.start, d.end = 0, n
	}
	for range 100 {
		n, err := d.r.Read(d.rbuf[d.end:])
		if n < 0 || n > len(d.rbuf)-d.end {
			d.err = fmt.Errorf("read records: reader returned an invalid count %d", n)
			return
		}
		d.end += n
		d.filled = d.filled || n == len(d.rbuf)
		d.busy = d.busy || n >= decoderBufSize/4
		if err != nil {
			d.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	d.err = io.ErrNoProgress
}
