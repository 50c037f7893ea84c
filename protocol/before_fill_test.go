package protocol_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

// TestBeforeFillRunsBeforeEveryReadWithPayloadsIntact: payloads returned
// earlier are still intact when the hook runs, and the hook runs before
// each read of the stream, not after it.
func TestBeforeFillRunsBeforeEveryReadWithPayloadsIntact(t *testing.T) {
	enc := protocol.NewEncoder()
	var stream []byte
	var want [][]byte
	for i := range 40 {
		data := bytes.Repeat([]byte{byte('a' + i%26)}, 5000+i*997)
		want = append(want, data)
		stream = enc.AppendBlocks(stream, data)
	}
	r := &countingReader{r: iotestHalfReader{bytes.NewReader(stream)}}
	dec := protocol.NewDecoder(r)
	var held [][]byte // payloads returned since the last fill
	var got []byte
	fills := 0
	dec.BeforeFill(func() error {
		if r.reads != fills {
			t.Fatalf("hook ran %d times before %d reads", fills, r.reads)
		}
		fills++
		for _, p := range held {
			got = append(got, p...)
		}
		held = held[:0]
		return nil
	})
	for {
		rec, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, rec.Payload)
	}
	for _, p := range held {
		got = append(got, p...)
	}
	if !bytes.Equal(got, bytes.Join(want, nil)) {
		t.Fatal("payloads changed before the hook ran")
	}
	if fills < 10 {
		t.Fatalf("only %d fills", fills)
	}
}

// TestBeforeFillErrorEndsTheStream: the hook's error is the stream's.
func TestBeforeFillErrorEndsTheStream(t *testing.T) {
	enc := protocol.NewEncoder()
	dec := protocol.NewDecoder(bytes.NewReader(enc.AppendOutput(nil, []byte("x\n"))))
	boom := errors.New("disk full")
	dec.BeforeFill(func() error { return boom })
	if _, err := dec.Next(); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the hook's", err)
	}
}

type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// iotestHalfReader returns half of what it is asked for (at least one
// byte), so blocks straddle reads.
type iotestHalfReader struct{ r io.Reader }

func (h iotestHalfReader) Read(p []byte) (int, error) {
	return h.r.Read(p[:(len(p)+1)/2])
}
