package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"
	"unicode/utf8"
)

// Output payloads are the script's bytes with a few escaped, so that a record
// is always one printable line and any byte sequence survives exactly:
//
//	\\      a backslash
//	\r      a carriage return (progress bars stay readable in kubectl logs)
//	\xHH    any other control byte (except TAB and ESC), DEL, and every byte
//	        that is not part of valid UTF-8
//
// Everything else, including TAB, ESC (colours) and valid UTF-8, is copied.

// plain marks the bytes that are copied as they are (ASCII only; bytes >=
// 0x80 go through UTF-8 validation).
var plain = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = true
	}
	t['\\'] = false
	t['\t'] = true
	t[0x1b] = true
	return t
}()

const hexDigits = "0123456789abcdef"

// SWAR constants: every byte of a 64-bit word set to the value.
const (
	lsb    = 0x0101010101010101
	msb    = 0x8080808080808080
	space8 = 0x2020202020202020
	bslash = 0x5c5c5c5c5c5c5c5c
)

// plainPrefix returns the length of the longest prefix of src made of bytes
// that plain marks. It tests eight bytes at a time: a word is plain when no
// byte is >= 0x80 or 0x7f (x|x+1 sets the byte's top bit; without bytes
// >= 0x80 the addition cannot carry between bytes), < 0x20 (x-0x20 borrows)
// or a backslash (x^0x5c is zero). Carries and borrows only run upwards from
// a byte that fails, so the lowest flagged byte of a word really fails the
// test: the scan jumps to it, and goes on after it when it is TAB or ESC
// (plain, but below 0x20). A short tail is tested with one last word that
// overlaps bytes already known to be plain.
func plainPrefix(src []byte) int {
	i := 0
	for {
		for ; i+32 <= len(src); i += 32 {
			if special(binary.LittleEndian.Uint64(src[i:]))|
				special(binary.LittleEndian.Uint64(src[i+8:]))|
				special(binary.LittleEndian.Uint64(src[i+16:]))|
				special(binary.LittleEndian.Uint64(src[i+24:])) != 0 {
				break
			}
		}
		for ; i+8 <= len(src); i += 8 {
			if s := special(binary.LittleEndian.Uint64(src[i:])); s != 0 {
				i += bits.TrailingZeros64(s) >> 3
				break
			}
		}
		if i+8 > len(src) {
			// Fewer than eight bytes left, all plain so far.
			if i == len(src) || len(src) >= 8 && special(binary.LittleEndian.Uint64(src[len(src)-8:])) == 0 {
				return len(src)
			}
			for i < len(src) && plain[src[i]] {
				i++
			}
			return i
		}
		if !plain[src[i]] {
			return i
		}
		i++ // TAB or ESC
	}
}

// special returns a non-zero value when one of the eight bytes in x may not
// be plain.
func special(x uint64) uint64 {
	y := x ^ bslash
	return ((x | (x + lsb)) | ((x - space8) &^ x) | ((y - lsb) &^ y)) & msb
}

// appendEscaped appends the escaped form of a prefix of src to dst, taking
// whole escape units (a plain byte, an escape, a UTF-8 character) while dst
// stays within limit bytes. It returns the extended slice and the number of
// source bytes consumed.
func appendEscaped(dst, src []byte, limit int) ([]byte, int) {
	// Write into spare capacity up to limit with no append per byte.
	if cap(dst) < limit {
		dst = slices.Grow(dst, limit-len(dst))
	}
	out := dst[:limit]
	w := len(dst)
	i := 0
	// The fast loop, while there is room for any escaped block: a run of
	// plain bytes that fills a word is copied at once; other bytes go through escapeCode
	// (a plain byte, \\, \r or \xHH written as one 4-byte store) unless they
	// may start a UTF-8 character. Its branches stay predictable for text
	// and for binary data alike.
	for i < len(src) && limit-w >= fastRoom {
		if i+8 <= len(src) {
			if special(binary.LittleEndian.Uint64(src[i:])) == 0 {
				n := 8 + plainPrefix(src[i+8:min(len(src), i+limit-w)])
				w += copy(out[w:], src[i:i+n])
				i += n
				continue
			}
		}
		for end := min(i+8, len(src)); i < end; {
			b := src[i]
			if b-0xc2 <= 0xf4-0xc2 && i+1 < len(src) && src[i+1]&0xc0 == 0x80 {
				if n := runeLen(src[i:]); n > 0 {
					w += copy(out[w:], src[i:i+n])
					i += n
					continue
				}
			}
			c := escapeCode[b]
			binary.LittleEndian.PutUint32(out[w:], uint32(c))
			w += int(c >> 32)
			i++
		}
	}
	// The careful loop: each unit only if it fits.
	for i < len(src) {
		b := src[i]
		room := limit - w
		if plain[b] {
			if room <= 0 {
				break
			}
			// A run of plain bytes: a short one byte by byte (binary data
			// has many), a long one eight at a time.
			end := min(len(src), i+room)
			j := i + 1
			for j < end && j < i+8 && plain[src[j]] {
				j++
			}
			if j == i+8 {
				j += plainPrefix(src[j:end])
			}
			w += copy(out[w:], src[i:j])
			i = j
			continue
		}
		switch {
		case b == '\\' || b == '\r':
			if room < 2 {
				return out[:w], i
			}
			c := byte('\\')
			if b == '\r' {
				c = 'r'
			}
			out[w], out[w+1] = '\\', c
			w += 2
			i++
			continue
		case b >= 0xc2 && b <= 0xf4 && i+1 < len(src) && src[i+1]&0xc0 == 0x80:
			// May start a valid multi-byte character (a lead byte followed
			// by a continuation byte); DecodeRune has the final word.
			if r, n := utf8.DecodeRune(src[i:]); r != utf8.RuneError || n > 1 {
				if room < n {
					return out[:w], i
				}
				w += copy(out[w:], src[i:i+n])
				i += n
				continue
			}
		}
		if room < 4 {
			return out[:w], i
		}
		out[w], out[w+1], out[w+2], out[w+3] = '\\', 'x', hexDigits[b>>4], hexDigits[b&0xf]
		w += 4
		i++
	}
	return out[:w], i
}

// runeLen returns the length of the valid UTF-8 character at the start of
// s, whose first byte is a lead byte (0xc2 to 0xf4) followed by a
// continuation byte, or 0 when it is not one. Two- and three-byte
// characters (accents, CJK, box drawing) are checked inline.
func runeLen(s []byte) int {
	switch b := s[0]; {
	case b < 0xe0:
		return 2
	case b < 0xf0:
		if len(s) < 3 || s[2]&0xc0 != 0x80 ||
			b == 0xe0 && s[1] < 0xa0 || // overlong
			b == 0xed && s[1] > 0x9f { // a surrogate half
			return 0
		}
		return 3
	}
	if r, n := utf8.DecodeRune(s); r != utf8.RuneError || n > 1 {
		return n
	}
	return 0
}

// fastRoom is the room appendEscaped's fast loop needs for one block: at
// most eight units (a byte or a UTF-8 character) start in it, and each
// writes at most four bytes (the 4-byte store of a shorter escape included).
const fastRoom = 8 * 4

// escapeCode holds, for every byte, its escaped form in the low four bytes
// (little-endian, to be stored as is) and its length above them.
// Bytes that may start a UTF-8 character are looked up only when they do
// not; they become \xHH.
var escapeCode = func() (t [256]uint64) {
	for b := range t {
		var e []byte
		switch {
		case plain[b]:
			e = []byte{byte(b)}
		case b == '\\':
			e = []byte(`\\`)
		case b == '\r':
			e = []byte(`\r`)
		default:
			e = []byte{'\\', 'x', hexDigits[b>>4], hexDigits[b&0xf]}
		}
		var code uint64
		for i, c := range e {
			code |= uint64(c) << (8 * i)
		}
		t[b] = code | uint64(len(e))<<32
	}
	return t
}()

// errBadEscape is returned for a backslash sequence the encoder never writes.
var errBadEscape = errors.New("invalid escape sequence in output payload")

// appendUnescaped appends the bytes src encodes to dst.
func appendUnescaped(dst, src []byte) ([]byte, error) {
	// The decoded bytes are never more than the encoded ones: write them
	// into spare capacity with no append per byte.
	dst = slices.Grow(dst, len(src))
	out := dst[len(dst) : len(dst)+len(src)]
	w := 0
	for i := 0; i < len(src); {
		c := src[i]
		if c != '\\' {
			// A run of literal bytes: a short one byte by byte (binary data
			// escapes every few bytes), a long one with IndexByte.
			j := i + 1
			for j < len(src) && j < i+8 && src[j] != '\\' {
				j++
			}
			if j == i+8 {
				if k := bytes.IndexByte(src[j:], '\\'); k < 0 {
					j = len(src)
				} else {
					j += k
				}
			}
			w += copy(out[w:], src[i:j])
			i = j
			continue
		}
		if i+1 >= len(src) {
			return dst, errBadEscape
		}
		switch src[i+1] {
		case '\\':
			out[w] = '\\'
			i += 2
		case 'r':
			out[w] = '\r'
			i += 2
		case 'x':
			if i+3 >= len(src) {
				return dst, errBadEscape
			}
			hi, lo := hexValue[src[i+2]], hexValue[src[i+3]]
			if hi|lo > 0xf {
				return dst, errBadEscape
			}
			out[w] = hi<<4 | lo
			i += 4
		default:
			return dst, errBadEscape
		}
		w++
	}
	return dst[:len(dst)+w], nil
}

// hexValue maps a hex digit to its value and every other byte to 0xff.
var hexValue = func() (t [256]byte) {
	for c := range t {
		v, ok := unhex(byte(c))
		if !ok {
			v = 0xff
		}
		t[c] = v
	}
	return t
}()

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
