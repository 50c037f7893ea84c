package protocol

import "bytes"

// DirectOutput is the size from which a block record's payload is worth
// writing on its own, straight from the decoder's buffer, rather than
// copied to be joined with other output (see AppendOutput).
const DirectOutput = 4 << 10

// AppendOutput is the decoder's fast path for the bulk of a stream: it
// appends to dst the payloads of the output records already buffered at the
// front of the stream (block records whole, o and p records needing no
// unescaping), as long as each one starts exactly at offset next, and returns the extended slice and the offset
// after the last record it took. It never reads from the stream and stops
// at the first record it cannot take that way (another type, an escape, a
// duplicate or a gap, an incomplete or malformed line): Next returns that
// one, with the checks and errors of the general path.
//
// A block record whose payload is DirectOutput bytes or more is left to
// Next too, so that the caller can write it from the decoder's buffer
// instead of copying it.
//
// A caller that keeps the offset of the next record it wants (as a client
// session does) calls AppendOutput before each Next; the result is the
// same as taking the payloads from Next, several times faster for short
// lines.
func (d *Decoder) AppendOutput(dst []byte, next int64) ([]byte, int64) {
	if d.skipping {
		return dst, next
	}
	b := d.rbuf[d.start:d.end]
	taken := 0
	for len(b) >= 4 {
		t := b[0]
		if t != byte(TypeOutput) && t != byte(TypePartial) && (t != byte(TypeBlock) || d.resync) || b[1] != ' ' || b[2] == '0' && b[3] != ' ' {
			break
		}
		// The offset: 1 to 18 digits (longer ones take the general path,
		// which checks their range), without a leading zero.
		i := 2
		var seq int64
		for i < len(b) && i < 20 && b[i]-'0' <= 9 {
			seq = seq*10 + int64(b[i]-'0')
			i++
		}
		if i == 2 || i == len(b) || b[i] != ' ' || seq != next {
			break
		}
		if t == byte(TypeBlock) {
			from, size := blockAt(b, i+1)
			if size == 0 || size-1-from >= DirectOutput {
				break
			}
			dst = append(dst, b[from:size-1]...)
			next += int64(size)
			taken += size
			b = b[size:]
			continue
		}
		nl := bytes.IndexByte(b[i+1:], '\n')
		if nl < 0 {
			break // the rest of the record is not buffered yet
		}
		size := i + 2 + nl
		if size > MaxRecord || bytes.IndexByte(b[i+1:size-1], '\\') >= 0 {
			break
		}
		if t == byte(TypeOutput) {
			dst = append(dst, b[i+1:size]...) // the line with its newline
		} else {
			dst = append(dst, b[i+1:size-1]...)
		}
		next += int64(size)
		taken += size
		b = b[size:]
	}
	d.start += taken
	d.scanned = max(d.scanned, d.start)
	return dst, next
}

// blockAt reads the length field of the block record at the front of b,
// which starts at b[i], and returns where its payload starts and the
// record's size, or a size of 0 when the record is not whole in b or not
// well-formed (Next then reports it).
func blockAt(b []byte, i int) (from, size int) {
	n, j := 0, i
	for j < len(b) && j-i < 5 && b[j]-'0' <= 9 {
		n = n*10 + int(b[j]-'0')
		j++
	}
	if j == i || b[i] == '0' || j == len(b) || b[j] != '\n' {
		return 0, 0
	}
	from, size = j+1, j+1+n+1
	if size > MaxRecord || size > len(b) || b[size-1] != '\n' {
		return 0, 0
	}
	return from, size
}
