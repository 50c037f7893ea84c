package protocol

import "strconv"

// blockHeaderFixed is the length of a block header without its offset's
// digits, with the longest length field: "d ", " ", five digits, "\n".
const blockHeaderFixed = 2 + 1 + 5 + 1

// MaxBlock returns the largest payload the encoder's next TypeBlock record
// can carry: the whole record (header, payload and final newline) is at
// most MaxRecord bytes.
func (e *Encoder) MaxBlock() int {
	return MaxRecord - blockHeaderFixed - 1 - decimalLen(uint64(e.next))
}

// AppendBlockHeader appends the header of a TypeBlock record carrying n raw
// output bytes ("d SEQ N\n") and advances the offset past the whole record:
// the caller writes exactly n bytes of output after the header, then one
// "\n". n must be between 1 and MaxBlock(); AppendBlockHeader panics
// otherwise, as the stream would be corrupt.
func (e *Encoder) AppendBlockHeader(dst []byte, n int) []byte {
	if n < 1 || n > e.MaxBlock() {
		panic("protocol: block payload of " + strconv.Itoa(n) + " bytes, want 1 to " + strconv.Itoa(e.MaxBlock()))
	}
	start := len(dst)
	dst = e.appendHeader(dst, TypeBlock)
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, '\n')
	e.next += int64(len(dst)-start) + int64(n) + 1
	return dst
}

// AppendBlocks appends data as TypeBlock records (as many as its length
// needs) and returns the extended slice. The bytes are copied as they are:
// no escaping, newlines included.
func (e *Encoder) AppendBlocks(dst, data []byte) []byte {
	for len(data) > 0 {
		n := min(len(data), e.MaxBlock())
		dst = e.AppendBlockHeader(dst, n)
		dst = append(dst, data[:n]...)
		dst = append(dst, '\n')
		data = data[n:]
	}
	return dst
}
