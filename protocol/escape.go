package protocol

import (
	"errors"
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

// escapeNext appends the escaped form of the rune or byte at the start of src
// to dst if the result stays within limit bytes, and reports how many source
// bytes it consumed (0 when it did not fit).
func escapeNext(dst, src []byte, limit int) ([]byte, int) {
	b := src[0]
	switch {
	case plain[b]:
		// Copy the whole run of plain bytes that fits.
		n := 1
		room := limit - len(dst)
		for n < len(src) && n < room && plain[src[n]] {
			n++
		}
		if n > room {
			return dst, 0
		}
		return append(dst, src[:n]...), n
	case b == '\\':
		if len(dst)+2 > limit {
			return dst, 0
		}
		return append(dst, '\\', '\\'), 1
	case b == '\r':
		if len(dst)+2 > limit {
			return dst, 0
		}
		return append(dst, '\\', 'r'), 1
	case b < utf8.RuneSelf:
		return appendHex(dst, b, limit)
	}
	r, size := utf8.DecodeRune(src)
	if r == utf8.RuneError && size <= 1 {
		return appendHex(dst, b, limit)
	}
	if len(dst)+size > limit {
		return dst, 0
	}
	return append(dst, src[:size]...), size
}

func appendHex(dst []byte, b byte, limit int) ([]byte, int) {
	if len(dst)+4 > limit {
		return dst, 0
	}
	return append(dst, '\\', 'x', hexDigits[b>>4], hexDigits[b&0xf]), 1
}

// errBadEscape is returned for a backslash sequence the encoder never writes.
var errBadEscape = errors.New("invalid escape sequence in output payload")

// appendUnescaped appends the bytes src encodes to dst.
func appendUnescaped(dst, src []byte) ([]byte, error) {
	for len(src) > 0 {
		i := indexByte(src, '\\')
		if i < 0 {
			return append(dst, src...), nil
		}
		dst = append(dst, src[:i]...)
		src = src[i:]
		if len(src) < 2 {
			return dst, errBadEscape
		}
		switch src[1] {
		case '\\':
			dst = append(dst, '\\')
			src = src[2:]
		case 'r':
			dst = append(dst, '\r')
			src = src[2:]
		case 'x':
			if len(src) < 4 {
				return dst, errBadEscape
			}
			hi, ok1 := unhex(src[2])
			lo, ok2 := unhex(src[3])
			if !ok1 || !ok2 {
				return dst, errBadEscape
			}
			dst = append(dst, hi<<4|lo)
			src = src[4:]
		default:
			return dst, errBadEscape
		}
	}
	return dst, nil
}

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
