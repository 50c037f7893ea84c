package shim_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// Bulk output moves as block records (the kernel tees it from the script's
// pipe to stdout), byte-exact, every record within the limit, and a replay
// from the middle of the blocks or from 0 is byte-identical to what was
// sent, from memory and from the spool file (both filled by splice).
func TestBulkOutputMovesAsBlocks(t *testing.T) {
	for _, args := range [][]string{nil, {"--spool-dir", "SPOOL"}} {
		t.Run(strings.Join(args, "="), func(t *testing.T) {
			dir := t.TempDir()
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], "SPOOL", filepath.Join(dir, "spool"))
			}
			data := make([]byte, 2<<20)
			rand.Read(data)
			bin := filepath.Join(dir, "random.bin")
			if err := os.WriteFile(bin, data, 0o644); err != nil {
				t.Fatal(err)
			}
			s := script(t, dir, "cat.sh", "echo before\ncat "+bin+"\nprintf 'after'\n")
			p := startShim(t, args)
			p.send(run(s))
			p.waitStatus(s, 30*time.Second)
			want := append(append([]byte("before\n"), data...), "after"...)
			if got := p.output(); !bytes.Equal(got, want) {
				t.Fatalf("output differs: got %d bytes, want %d", len(got), len(want))
			}
			p.mu.Lock()
			inBlocks, blocks := 0, 0
			var mid rec
			for _, r := range p.records {
				if r.Size > protocol.MaxRecord {
					t.Errorf("record of %d bytes", r.Size)
				}
				if r.Type == protocol.TypeBlock {
					inBlocks += len(r.Payload)
					if blocks++; blocks == 20 {
						mid = r
					}
				}
			}
			original := bytes.Clone(p.raw.Bytes())
			p.mu.Unlock()
			// How much comes in blocks depends on how far the script gets
			// ahead of the shim's reads; a quarter is far below what any
			// run shows, and none at all is the failure this looks for.
			if inBlocks < len(data)/4 {
				t.Fatalf("only %d of %d bytes of bulk output came in %d block records", inBlocks, len(data), blocks)
			}
			p.checkReplays(t, original, mid.Seq) // mid is a block in the middle
		})
	}
}

// Output that must pass through the shim's memory never comes as blocks:
// under a pseudo-terminal, and with masked values (a block would carry the
// secret as the script printed it).
func TestBlocksOnlyForPlainPipes(t *testing.T) {
	dir := t.TempDir()
	secret := "hunter2-secret-value"
	s := script(t, dir, "bulk.sh", "i=0; while [ $i -lt 3000 ]; do echo \"line $i $MY_SECRET\"; i=$((i+1)); done\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{name: "tty", args: []string{"--tty"}},
		{name: "masked", args: []string{"--mask-env", "MY_SECRET"}, env: []string{"MY_SECRET=" + secret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startShim(t, tc.args, func(c *exec.Cmd) { c.Env = append(c.Env, tc.env...) })
			p.send(run(s))
			p.waitStatus(s, 30*time.Second)
			p.mu.Lock()
			defer p.mu.Unlock()
			for _, r := range p.records {
				if r.Type == protocol.TypeBlock {
					t.Fatalf("a block record (%d bytes) with %s", len(r.Payload), tc.args)
				}
			}
			if bytes.Contains(p.raw.Bytes(), []byte(secret)) {
				t.Fatal("the masked value reached stdout")
			}
		})
	}
}

// Output read after bulk output stops being bulk once the shim finds the
// script's pipe empty: a burst's end goes out as block records (see pump),
// but the next line, printed after a pause, is a line record again, the
// readable kind.
func TestLinesAfterABurstAreLineRecords(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	s := script(t, dir, "relay.sh", "cat "+fifo+"\n")
	p := startShim(t, nil)
	p.send(run(s))
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	bulk := bytes.Repeat([]byte("a line of bulk output\n"), 8<<10) // 176 KiB in one write
	if _, err := w.Write(bulk); err != nil {
		t.Fatal(err)
	}
	p.waitRecord(0, 30*time.Second, func(r rec) bool { return r.Type == protocol.TypeBlock })
	eventually(t, 30*time.Second, "the bulk output to arrive", func() bool { return len(p.output()) == len(bulk) })
	if _, err := w.Write([]byte("done\n")); err != nil {
		t.Fatal(err)
	}
	r, _ := p.waitRecord(0, 30*time.Second, func(r rec) bool { return bytes.Equal(r.Payload, []byte("done\n")) })
	if r.Type != protocol.TypeOutput {
		t.Fatalf("the line after the burst came as a %s record, want an o record", r.Type)
	}
}
