package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrMalformed is wrapped by every error about a line that is not a valid
// record. The Decoder stays usable after it: the line has been consumed.
var ErrMalformed = errors.New("malformed record")

// ErrTruncated is returned when the stream ends in the middle of a record.
var ErrTruncated = errors.New("stream ended inside a record")

// ErrUnknownType is wrapped when a record has a type this version does not
// know, which means the shim speaks a newer protocol.
var ErrUnknownType = errors.New("unknown record type")

func indexByte(b []byte, c byte) int { return bytes.IndexByte(b, c) }

// Parse decodes one record line, which must end in a newline. The returned
// payload may alias line (output records without escapes) or buf, which it
// reuses; both stay valid until either is modified.
func Parse(line, buf []byte) (Record, []byte, error) {
	n := len(line)
	if n == 0 || line[n-1] != '\n' {
		return Record{}, buf, fmt.Errorf("%w: no trailing newline", ErrMalformed)
	}
	if n > MaxRecord {
		return Record{}, buf, fmt.Errorf("%w: %d bytes exceeds the %d-byte limit", ErrMalformed, n, MaxRecord)
	}
	if n < 5 || line[1] != ' ' {
		return Record{}, buf, fmt.Errorf("%w: %q does not start with \"TYPE SEQ \"", ErrMalformed, clip(line))
	}
	t := Type(line[0])
	if !t.Known() {
		return Record{}, buf, fmt.Errorf("%w %s: %w (is the shim newer than this client?)", ErrMalformed, t, ErrUnknownType)
	}
	sp := bytes.IndexByte(line[2:], ' ')
	if sp <= 0 {
		return Record{}, buf, fmt.Errorf("%w: %q has no sequence field", ErrMalformed, clip(line))
	}
	seqField := line[2 : 2+sp]
	rec := Record{Type: t, Size: n, Seq: Unsequenced}
	if t.Sequenced() {
		seq, err := parseSeq(seqField)
		if err != nil {
			return Record{}, buf, fmt.Errorf("%w: %q: %w", ErrMalformed, clip(line), err)
		}
		rec.Seq = seq
	} else if string(seqField) != "-" {
		return Record{}, buf, fmt.Errorf("%w: unsequenced %s record has sequence %q", ErrMalformed, t, seqField)
	}
	payload := line[2+sp+1:]
	switch t {
	case TypeOutput, TypePartial:
		body := payload[:len(payload)-1]
		if bytes.IndexByte(body, '\\') < 0 {
			if t == TypeOutput {
				rec.Payload = payload
			} else {
				rec.Payload = body
			}
			return rec, buf, nil
		}
		var err error
		buf, err = appendUnescaped(buf[:0], body)
		if err != nil {
			return Record{}, buf, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if t == TypeOutput {
			buf = append(buf, '\n')
		}
		rec.Payload = buf
	default:
		rec.Payload = payload[:len(payload)-1]
		if len(rec.Payload) == 0 || rec.Payload[0] != '{' {
			return Record{}, buf, fmt.Errorf("%w: %s record payload is not a JSON object", ErrMalformed, t)
		}
	}
	return rec, buf, nil
}

func parseSeq(b []byte) (int64, error) {
	if len(b) > 1 && b[0] == '0' {
		return 0, errors.New("sequence has a leading zero")
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("sequence is not a decimal number")
		}
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sequence out of range: %w", err)
	}
	return v, nil
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// Decoder reads records from a stream.
type Decoder struct {
	br  *bufio.Reader
	buf []byte
	// skipping is set after an over-long line, until its end is consumed.
	skipping bool
}

// NewDecoder returns a decoder reading from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{br: bufio.NewReaderSize(r, 4*MaxRecord)}
}

// Next returns the next record. Errors wrapping ErrMalformed concern one
// line only; the caller may call Next again. ErrTruncated and read errors
// end the stream; a stream that ends on a record boundary returns io.EOF.
func (d *Decoder) Next() (Record, error) {
	for {
		line, err := d.br.ReadSlice('\n')
		if d.skipping {
			if err == nil {
				d.skipping = false
			}
			if err == bufio.ErrBufferFull || err == nil {
				continue
			}
		}
		switch {
		case err == nil:
			rec, buf, perr := Parse(line, d.buf)
			d.buf = buf
			return rec, perr
		case errors.Is(err, bufio.ErrBufferFull):
			d.skipping = true
			return Record{}, fmt.Errorf("%w: line longer than %d bytes", ErrMalformed, MaxRecord)
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				return Record{}, ErrTruncated
			}
			return Record{}, io.EOF
		default:
			return Record{}, err
		}
	}
}
