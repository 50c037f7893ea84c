package protocol

import (
	"bytes"
	"unicode/utf8"
)

// This file keeps a deliberately simple, unoptimised encoder and unescaper:
// one rune or byte at a time, straight from the escaping rules in
// PROTOCOL.md. The property and fuzz tests compare the optimised code in
// encode.go/escape.go against it byte for byte, so a fast path can never
// change the wire format.

// refPlain reports whether the encoder copies b unchanged (ASCII only).
func refPlain(b byte) bool {
	return b == '\t' || b == 0x1b || (b >= 0x20 && b < 0x7f && b != '\\')
}

// refEscapeUnit returns the encoded form of the first rune or byte of src
// (in a fixed array, to keep the reference quick enough to run often) and
// how many source bytes it covers.
func refEscapeUnit(src []byte) (unit [4]byte, size, consumed int) {
	b := src[0]
	hex := [4]byte{'\\', 'x', hexDigits[b>>4], hexDigits[b&0xf]}
	switch {
	case refPlain(b):
		return [4]byte{b}, 1, 1
	case b == '\\':
		return [4]byte{'\\', '\\'}, 2, 1
	case b == '\r':
		return [4]byte{'\\', 'r'}, 2, 1
	case b < utf8.RuneSelf:
		return hex, 4, 1
	}
	r, n := utf8.DecodeRune(src)
	if r == utf8.RuneError && n <= 1 {
		return hex, 4, 1
	}
	copy(unit[:], src[:n])
	return unit, n, n
}

// refEncoder is the reference for Encoder.AppendOutput: each line is cut
// into records filled greedily with whole escape units up to MaxRecord
// bytes including the newline.
type refEncoder struct{ next int64 }

func (e *refEncoder) appendOutput(dst, data []byte) []byte {
	for len(data) > 0 {
		line, rest, complete := data, []byte(nil), false
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, rest, complete = data[:i], data[i+1:], true
		}
		for first := true; first || len(line) > 0; first = false {
			start := len(dst)
			dst = appendHeader(dst, TypeOutput, e.next)
			for len(line) > 0 {
				unit, size, n := refEscapeUnit(line)
				if len(dst)-start+size+1 > MaxRecord {
					break
				}
				dst = append(dst, unit[:size]...)
				line = line[n:]
			}
			if len(line) > 0 || !complete {
				dst[start] = byte(TypePartial)
			}
			dst = append(dst, '\n')
			e.next += int64(len(dst) - start)
		}
		data = rest
	}
	return dst
}

// refUnescape is the reference for the output payload decoder. ok is false
// for a backslash the grammar does not allow.
func refUnescape(src []byte) (out []byte, ok bool) {
	out = []byte{}
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' {
			out = append(out, src[i])
			continue
		}
		if i+1 >= len(src) {
			return nil, false
		}
		switch src[i+1] {
		case '\\':
			out = append(out, '\\')
			i++
		case 'r':
			out = append(out, '\r')
			i++
		case 'x':
			if i+3 >= len(src) {
				return nil, false
			}
			hi, ok1 := unhex(src[i+2])
			lo, ok2 := unhex(src[i+3])
			if !ok1 || !ok2 {
				return nil, false
			}
			out = append(out, hi<<4|lo)
			i += 3
		default:
			return nil, false
		}
	}
	return out, true
}
