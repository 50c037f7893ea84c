package client_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// bulkJob makes a fake job whose output is block records of every size
// around the decoder's buffer and block limits, with line records between
// some of them, all sent in one write: the client's reads then cut blocks
// anywhere and its decoder moves unread bytes to the front of its buffer
// while payloads it returned earlier still wait to be written.
func bulkJob(t *testing.T) (*fakeShim, []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var want bytes.Buffer
	var chunks []func(f *fakeShim)
	for i := range 120 {
		n := 1 + rng.IntN(3*protocol.MaxRecord)
		if i%7 == 0 {
			n = 1 + rng.IntN(300<<10)
		}
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(rng.IntN(256)) // newlines, backslashes, anything
		}
		want.Write(data)
		chunks = append(chunks, func(f *fakeShim) { f.blocksLocked(data) })
		if i%5 == 0 {
			line := strings.Repeat("l", rng.IntN(100)) + "\n"
			want.WriteString(line)
			chunks = append(chunks, func(f *fakeShim) { f.outputLocked(line) })
		}
	}
	f := newFakeShim(t)
	f.onJob = func(f *fakeShim, c protocol.Command) {
		script := c.Scripts[0]
		f.record(protocol.TypeBegin, protocol.Begin{Script: script, Phase: "script", Job: c.ID})
		f.batch(func() {
			for _, ch := range chunks {
				ch(f)
			}
		})
		f.record(protocol.TypeStatus, protocol.Status{Script: script, Phase: "script", Job: c.ID})
		f.record(protocol.TypeJob, protocol.JobDone{Job: c.ID})
	}
	return f.start(), want.Bytes()
}

func bulkOpts(out io.Writer) client.Options {
	return client.Options{
		Output:           out,
		PingInterval:     time.Second,
		StallTimeout:     time.Minute,
		ReconnectMin:     time.Millisecond,
		ReconnectMax:     10 * time.Millisecond,
		ReconnectTimeout: time.Minute,
		CancelTimeout:    time.Minute,
	}
}

// TestBulkOutputToAFileIsExact writes block payloads with writev(2): the
// output is a file.
func TestBulkOutputToAFileIsExact(t *testing.T) {
	f, want := bulkJob(t)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := client.Run(context.Background(), f, testJob, bulkOpts(out)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	assertSameBytes(t, got, want)
}

// TestBulkOutputToAPipeIsExact writes block payloads with writev(2) to a
// pipe whose reader is slow: writes are partial and resumed.
func TestBulkOutputToAPipeIsExact(t *testing.T) {
	f, want := bulkJob(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make(chan []byte)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 1000) // small reads: the writer waits on a full pipe
		for {
			n, err := r.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				got <- b.Bytes()
				return
			}
		}
	}()
	_, err = client.Run(context.Background(), f, testJob, bulkOpts(w))
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	assertSameBytes(t, <-got, want)
}

// TestBulkOutputToAWriterIsExact covers outputs that are not files: one
// write per payload.
func TestBulkOutputToAWriterIsExact(t *testing.T) {
	f, want := bulkJob(t)
	var out bytes.Buffer
	if _, err := client.Run(context.Background(), f, testJob, bulkOpts(&out)); err != nil {
		t.Fatal(err)
	}
	assertSameBytes(t, out.Bytes(), want)
}

// TestBulkOutputToAClosedPipeEndsTheSession: a failed vectored write ends
// the session with the output's error.
func TestBulkOutputToAClosedPipeEndsTheSession(t *testing.T) {
	f, _ := bulkJob(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	_, err = client.Run(context.Background(), f, testJob, bulkOpts(w))
	if err == nil || !strings.Contains(err.Error(), "write the job's output") || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("error %v, want the output's broken pipe", err)
	}
}

func assertSameBytes(t *testing.T, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Fatalf("output differs at byte %d: got %d bytes, want %d", i, len(got), len(want))
}
