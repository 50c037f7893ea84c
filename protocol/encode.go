package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Encoder turns script output and events into records. It numbers sequenced
// records with their byte offset in the stream. An Encoder is not safe for
// concurrent use: the shim has exactly one writer of its stdout.
type Encoder struct {
	next int64
	// digits is the decimal length of next while next < digitsUntil: the
	// length changes rarely, and computing it costs as much as a short
	// line's copy.
	digits      int
	digitsUntil uint64
}

// NewEncoder returns an encoder whose first sequenced record has offset 0.
func NewEncoder() *Encoder { return &Encoder{} }

// Offset returns the offset the next sequenced record will have, which is
// also the length of the sequenced stream written so far.
func (e *Encoder) Offset() int64 { return e.next }

// appendHeader appends "T SEQ " and returns the new slice.
func appendHeader(dst []byte, t Type, seq int64) []byte {
	if seq == Unsequenced {
		return append(dst, byte(t), ' ', '-', ' ')
	}
	return appendHeaderDigits(dst, t, uint64(seq), decimalLen(uint64(seq)))
}

// appendHeader appends the header of the encoder's next sequenced record.
func (e *Encoder) appendHeader(dst []byte, t Type) []byte {
	u := uint64(e.next)
	if u >= e.digitsUntil {
		e.digits = decimalLen(u)
		e.digitsUntil = math.MaxUint64
		if e.digits < len(pow10) {
			e.digitsUntil = pow10[e.digits]
		}
	}
	return appendHeaderDigits(dst, t, u, e.digits)
}

// appendHeaderDigits appends "T SEQ " for the offset u of n decimal digits.
// The digits are written in place, four at a time: strconv.AppendInt costs
// more than the rest of a short line's record.
func appendHeaderDigits(dst []byte, t Type, u uint64, n int) []byte {
	l := len(dst)
	if cap(dst)-l < n+3 {
		dst = slices.Grow(dst, n+3)
	}
	dst = dst[:l+n+3]
	dst[l], dst[l+1] = byte(t), ' '
	i := l + 2 + n
	dst[i] = ' '
	for u >= 10000 {
		q := u / 10000
		r := u - q*10000
		hi, lo := 2*(r/100), 2*(r%100)
		i -= 4
		dst[i], dst[i+1], dst[i+2], dst[i+3] = digitPairs[hi], digitPairs[hi+1], digitPairs[lo], digitPairs[lo+1]
		u = q
	}
	if u >= 100 {
		q := u / 100
		r := 2 * (u - q*100)
		i -= 2
		dst[i], dst[i+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	if u >= 10 {
		dst[i-2], dst[i-1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		dst[i-1] = byte('0' + u)
	}
	return dst
}

// decimalLen returns the number of decimal digits of u.
func decimalLen(u uint64) int {
	n := bits.Len64(u) * 1233 >> 12 // about log10(2) * bit length
	if n < len(pow10) && u >= pow10[n] {
		n++
	}
	return max(n, 1)
}

// pow10 holds 10^0 to 10^19.
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// AppendOutput appends records carrying data to dst and returns the extended
// slice. Each complete line becomes a TypeOutput record; a final piece
// without a newline becomes a TypePartial record; a line too long for one
// record is split into TypePartial records (at UTF-8 character boundaries
// where the bytes are valid UTF-8) ending in a TypeOutput record.
func (e *Encoder) AppendOutput(dst, data []byte) []byte {
	return e.appendOutput(dst, data, TypeOutput, TypePartial)
}

// AppendStderr is AppendOutput for a script's stderr kept apart: the same
// records, of the types TypeStderr and TypeStderrPartial.
func (e *Encoder) AppendStderr(dst, data []byte) []byte {
	return e.appendOutput(dst, data, TypeStderr, TypeStderrPartial)
}

// appendOutput is AppendOutput with the types of a complete line's record
// and of a partial one.
func (e *Encoder) appendOutput(dst, data []byte, full, partial Type) []byte {
	for len(data) > 0 {
		line, rest, complete := data, []byte(nil), false
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, rest, complete = data[:i], data[i+1:], true
		}
		// Fast path: a line that needs no escaping and fits in one record
		// (maxHeader covers the longest header) is copied as it is.
		if len(line) <= MaxRecord-1-maxHeader && plainPrefix(line) == len(line) {
			start := len(dst)
			t := full
			if !complete {
				t = partial
			}
			dst = e.appendHeader(dst, t)
			dst = append(dst, line...)
			dst = append(dst, '\n')
			e.next += int64(len(dst) - start)
		} else {
			dst = e.appendLine(dst, line, complete, full, partial)
		}
		data = rest
	}
	return dst
}

// maxHeader is the longest record header: type, space, a 19-digit offset,
// space.
const maxHeader = 2 + 19 + 1

// appendLine encodes one line (without its newline) into one or more records.
func (e *Encoder) appendLine(dst, line []byte, complete bool, full, partial Type) []byte {
	for {
		start := len(dst)
		dst = e.appendHeader(dst, full)
		var n int
		dst, n = appendEscaped(dst, line, start+MaxRecord-1) // room for the newline
		line = line[n:]
		if len(line) > 0 || !complete {
			dst[start] = byte(partial)
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
	if !t.Sequenced() || t.IsOutput() || t.IsStderr() {
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
