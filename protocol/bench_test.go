package protocol

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// benchShape is one kind of script output the benchmarks push through the
// encoder and decoder, delivered in chunks the way a pipe read returns them.
type benchShape struct {
	name   string
	chunks [][]byte
}

// benchShapes returns the output shapes the performance targets name: 80-byte
// ASCII lines, ASCII without any newline (64 KiB chunks), non-ASCII text and
// random binary.
func benchShapes() []benchShape {
	const total = 4 << 20
	const chunk = 64 << 10
	split := func(data []byte) [][]byte {
		var out [][]byte
		for len(data) > 0 {
			n := min(chunk, len(data))
			out = append(out, data[:n])
			data = data[n:]
		}
		return out
	}
	line := []byte("0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ build step ok\n")
	lines := bytes.Repeat(line, total/len(line))
	noNL := bytes.Repeat([]byte("abcdefghijklmnop"), total/16)
	// Non-ASCII text: accented words, box drawing, CJK, an emoji, a \r
	// progress update.
	utf8Line := []byte("Übersetzung ✓ ═══ 构建成功 🚀 façade naïve\r Fortschritt 42 %\n")
	utf8Lines := bytes.Repeat(utf8Line, total/len(utf8Line))
	bin := make([]byte, total)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range bin {
		bin[i] = byte(rng.Uint32())
	}
	return []benchShape{
		{"lines80", split(lines)},
		{"nonewline", split(noNL)},
		{"utf8", split(utf8Lines)},
		{"binary", split(bin)},
	}
}

func shapeSize(s benchShape) int64 {
	var n int64
	for _, c := range s.chunks {
		n += int64(len(c))
	}
	return n
}

func encodeShape(s benchShape) []byte {
	enc := NewEncoder()
	var out []byte
	for _, c := range s.chunks {
		out = enc.AppendOutput(out, c)
	}
	return out
}

func BenchmarkEncode(b *testing.B) {
	for _, s := range benchShapes() {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(shapeSize(s))
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				enc := NewEncoder()
				for _, c := range s.chunks {
					buf = enc.AppendOutput(buf[:0], c)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, s := range benchShapes() {
		b.Run(s.name, func(b *testing.B) {
			stream := encodeShape(s)
			b.SetBytes(shapeSize(s))
			b.ReportAllocs()
			r := bytes.NewReader(stream)
			for b.Loop() {
				r.Reset(stream)
				dec := NewDecoder(r)
				var n int64
				for {
					rec, err := dec.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n += int64(len(rec.Payload))
				}
				if n != shapeSize(s) {
					b.Fatalf("decoded %d bytes, want %d", n, shapeSize(s))
				}
			}
		})
	}
}

// BenchmarkEncodeDecode is both ends together, chunk by chunk as in a
// real session (the shim encodes what one pipe read returned, the client
// decodes that batch): the encoder's and the decoder's time added up.
func BenchmarkEncodeDecode(b *testing.B) {
	for _, s := range benchShapes() {
		b.Run(s.name, func(b *testing.B) {
			size := shapeSize(s)
			b.SetBytes(size)
			b.ReportAllocs()
			var batch []byte
			r := bytes.NewReader(nil)
			dec := NewDecoder(r)
			for b.Loop() {
				enc := NewEncoder()
				var n int64
				for _, c := range s.chunks {
					batch = enc.AppendOutput(batch[:0], c)
					r.Reset(batch)
					// A batch holds whole records: a fresh decoder state
					// (same buffers) per batch loses nothing.
					*dec = Decoder{r: r, rbuf: dec.rbuf, buf: dec.buf}
					for {
						rec, err := dec.Next()
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						n += int64(len(rec.Payload))
					}
				}
				if n != size {
					b.Fatalf("decoded %d bytes, want %d", n, size)
				}
			}
		})
	}
}
