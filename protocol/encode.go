package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Encoder turns script output and events into records. It numbers sequenced
// records with their byte offset in the stream. An Encoder is not safe for
// concurrent use: the shim has exactly one writer of its stdout.
type Encoder struct {
	next int64
}

// NewEncoder returns an encoder whose first sequenced record has offset 0.
func NewEncoder() *Encoder { return &Encoder{} }

// Offset returns the offset the next sequenced record will have, which is
// also the length of the sequenced stream written so far.
func (e *Encoder) Offset() int64 { return e.next }

// appendHeader appends "T SEQ " and returns the new slice.
func appendHeader(dst []byte, t Type, seq int64) []byte {
	dst = append(dst, byte(t), ' ')
	if seq == Unsequenced {
		dst = append(dst, '-')
	} else {
		dst = strconv.AppendInt(dst, seq, 10)
	}
	return append(dst, ' ')
}

// AppendOutput appends records carrying data to dst and returns the extended
// slice. Each complete line becomes a TypeOutput record; a final piece
// without a newline becomes a TypePartial record; a line too long for one
// record is split into TypePartial records (at UTF-8 character boundaries
// where the bytes are valid UTF-8) ending in a TypeOutput record.
func (e *Encoder) AppendOutput(dst, data []byte) []byte {
	for len(data) > 0 {
		line, rest, complete := data, []byte(nil), false
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, rest, complete = data[:i], data[i+1:], true
		}
		dst = e.appendLine(dst, line, complete)
		data = rest
	}
	return dst
}

// appendLine encodes one line (without its newline) into one or more records.
func (e *Encoder) appendLine(dst, line []byte, complete bool) []byte {
	for {
		start := len(dst)
		dst = appendHeader(dst, TypeOutput, e.next)
		limit := start + MaxRecord - 1 // room for the newline
		for len(line) > 0 {
			var n int
			dst, n = escapeNext(dst, line, limit)
			if n == 0 {
				break
			}
			line = line[n:]
		}
		if len(line) > 0 || !complete {
			dst[start] = byte(TypePartial)
		}
		dst = append(dst, '\n')
		e.next += int64(len(dst) - start)
		if len(line) == 0 {
			return dst
		}
	}
}

// AppendJSON appends a sequenced record of type t whose payload is v encoded
// as JSON. It fails if v cannot be encoded or the record would exceed
// MaxRecord; the encoder's offset is unchanged then.
func (e *Encoder) AppendJSON(dst []byte, t Type, v any) ([]byte, error) {
	if !t.Sequenced() || t.IsOutput() {
		return dst, fmt.Errorf("encode record: type %s is not a sequenced JSON record", t)
	}
	out, err := appendJSONRecord(dst, t, e.next, v)
	if err != nil {
		return dst, err
	}
	e.next += int64(len(out) - len(dst))
	return out, nil
}

// AppendUnsequenced appends an unsequenced record (TypeResumed or TypeAlive)
// whose payload is v encoded as JSON.
func AppendUnsequenced(dst []byte, t Type, v any) ([]byte, error) {
	if t.Sequenced() {
		return dst, fmt.Errorf("encode record: type %s is sequenced", t)
	}
	return appendJSONRecord(dst, t, Unsequenced, v)
}

func appendJSONRecord(dst []byte, t Type, seq int64, v any) ([]byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("encode %s record: %w", t, err)
	}
	start := len(dst)
	dst = appendHeader(dst, t, seq)
	dst = append(dst, payload...) // json.Marshal never emits a raw newline
	dst = append(dst, '\n')
	if len(dst)-start > MaxRecord {
		return dst[:start], fmt.Errorf("encode %s record: %d bytes exceeds the %d-byte record limit", t, len(dst)-start, MaxRecord)
	}
	return dst, nil
}
