package protocol

import (
	"bytes"
	"testing"
)

// TestEncoderOffsetsAcrossDigitCounts starts encoders just below every power
// of ten and checks that each record's offset is the byte count before it:
// the encoder caches the offset's digit count, and a stale count would write
// a wrong (or mis-sized) offset exactly at these crossings.
func TestEncoderOffsetsAcrossDigitCounts(t *testing.T) {
	for _, p := range pow10[1:19] { // 10^19 is past the largest int64 offset
		for _, back := range []uint64{1, 3, 40, 200} {
			if back > p {
				continue
			}
			start := int64(p - back)
			enc := &Encoder{next: start}
			var stream []byte
			for i := range 12 {
				stream = enc.AppendOutput(stream, bytes.Repeat([]byte{'a' + byte(i)}, i*7))
				stream = enc.AppendOutput(stream, []byte("\n"))
			}
			want := start
			for line := range bytes.Lines(stream) {
				rec, _, err := Parse(line, nil)
				if err != nil {
					t.Fatalf("start %d: %v", start, err)
				}
				if rec.Seq != want {
					t.Fatalf("start %d: record %q has offset %d, want %d", start, line, rec.Seq, want)
				}
				want += int64(len(line))
			}
			if enc.Offset() != want {
				t.Fatalf("start %d: Offset() = %d, want %d", start, enc.Offset(), want)
			}
		}
	}
}
