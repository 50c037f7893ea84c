package shim_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// stderrOutput returns the concatenated payloads of the stderr records so
// far.
func (p *shimProc) stderrOutput() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, r := range p.records {
		if r.Type.IsStderr() {
			out = append(out, r.Payload...)
		}
	}
	return out
}

// bothStreams writes a script to dir that writes to stdout and stderr
// alike: lines, binary bytes, a line longer than a record, bulk output (2
// MiB of random bytes on stdout, sent as blocks; 256 KiB on stderr, which
// escaping more than doubles, within the default memory replay window),
// and a last line without a newline on each. It returns the script and what each stream must hold.
func bothStreams(t *testing.T, dir string) (s string, stdout, stderr []byte) {
	t.Helper()
	bulk := make([]byte, 2<<20)
	rand.Read(bulk)
	errBulk := bulk[:256<<10]
	long := bytes.Repeat([]byte("é"), 20_000) // 40 KB: one line over several records
	for name, data := range map[string][]byte{"bulk.bin": bulk, "errbulk.bin": errBulk, "long.txt": long} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s = script(t, dir, "both.sh", `d=$(dirname "$0")
echo out one
echo err one >&2
printf 'bin\000\377\r\n' >&2
cat "$d/bulk.bin"
cat "$d/long.txt" >&2
echo >&2
cat "$d/errbulk.bin" >&2
echo out two
printf 'out tail'
printf 'err tail' >&2
`)
	stdout = append(append([]byte("out one\n"), bulk...), "out two\nout tail"...)
	stderr = append(append([]byte("err one\nbin\x00\xff\r\n"), long...), '\n')
	stderr = append(append(stderr, errBulk...), "err tail"...)
	return s, stdout, stderr
}

// A job that asks for stderr apart gets each stream back byte for byte,
// stderr in O and P records of at most MaxRecord bytes; the stream replays
// byte-identically from any record, from memory and from the spool file.
func TestStderrSeparate(t *testing.T) {
	for _, args := range [][]string{nil, {"--spool-dir", "SPOOL"}} {
		t.Run(strings.Join(args, "="), func(t *testing.T) {
			dir := t.TempDir()
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], "SPOOL", filepath.Join(dir, "spool"))
			}
			s, wantOut, wantErr := bothStreams(t, dir)
			p := startShim(t, args)
			p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "both", Scripts: []string{s}, Stderr: protocol.StderrSeparate})
			p.waitRecord(0, 30*time.Second, ofType(protocol.TypeJob))
			if got := p.output(); !bytes.Equal(got, wantOut) {
				t.Errorf("stdout differs: got %d bytes, want %d", len(got), len(wantOut))
			}
			if got := p.stderrOutput(); !bytes.Equal(got, wantErr) {
				t.Errorf("stderr differs: got %d bytes, want %d", len(got), len(wantErr))
			}
			p.mu.Lock()
			original := append([]byte(nil), p.raw.Bytes()...)
			var mid int64 // a stderr record's offset, half-way
			var blocks int
			for _, r := range p.records {
				if r.Size > protocol.MaxRecord {
					t.Fatalf("record of %d bytes", r.Size)
				}
				if r.Type.IsStderr() && mid == 0 && r.Seq > int64(len(original)/2) {
					mid = r.Seq
				}
				if r.Type == protocol.TypeBlock {
					blocks++
				}
			}
			p.mu.Unlock()
			if blocks == 0 {
				t.Error("no block record: stdout's bulk output did not take the block path")
			}
			if mid == 0 {
				t.Fatal("no stderr record in the stream's second half")
			}
			p.checkReplays(t, original, mid)
		})
	}
}

// A piece of a stderr line goes out while the script waits, as a P record,
// as unfinished stdout lines do.
func TestStderrPartialLineFlushed(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	s := script(t, dir, "partial.sh", `printf 'err waiting' >&2
printf 'out waiting'
while [ ! -e `+gate+` ]; do sleep 0.02; done
echo ' done' >&2
`)
	p := startShim(t, nil)
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "partial", Scripts: []string{s}, Stderr: protocol.StderrSeparate})
	p.waitRecord(0, 20*time.Second, func(r rec) bool {
		return r.Type == protocol.TypeStderrPartial && string(r.Payload) == "err waiting"
	})
	p.waitRecord(0, 20*time.Second, func(r rec) bool {
		return r.Type == protocol.TypePartial && string(r.Payload) == "out waiting"
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p.waitRecord(0, 20*time.Second, ofType(protocol.TypeJob))
	if got := string(p.stderrOutput()); got != "err waiting done\n" {
		t.Fatalf("stderr %q", got)
	}
}

// Without the field (and with "merged") stderr shares stdout's pipe, as
// before: no stderr record, both streams in one output in the order
// written.
func TestStderrMergedByDefault(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "merged.sh", "echo one\necho two >&2\necho three\nprintf four >&2\n")
	p := startShim(t, nil)
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "default", Scripts: []string{s}},
		protocol.Command{Cmd: protocol.CmdJob, ID: "merged", Scripts: []string{s}, Stderr: protocol.StderrMerged})
	_, i := p.waitRecord(0, 20*time.Second, ofType(protocol.TypeJob))
	p.waitRecord(i+1, 20*time.Second, ofType(protocol.TypeJob))
	if got := string(p.output()); got != "one\ntwo\nthree\nfourone\ntwo\nthree\nfour" {
		t.Fatalf("output %q", got)
	}
	if got := p.stderrOutput(); len(got) > 0 {
		t.Fatalf("stderr records in merged mode: %q", got)
	}
}

// Masked values are masked in stderr kept apart too.
func TestStderrSeparateMasked(t *testing.T) {
	dir := t.TempDir()
	s := script(t, dir, "secret.sh", "echo \"out $1\"\nprintf 'err s3cr3t-v' >&2\nsleep 0.1\nprintf 'alue!\\n' >&2\n")
	p := startShim(t, nil)
	p.send(protocol.Command{Cmd: protocol.CmdJob, ID: "mask", Argv: []string{"/bin/sh", s, "s3cr3t-value"},
		Mask: []string{"s3cr3t-value"}, Stderr: protocol.StderrSeparate})
	p.waitRecord(0, 20*time.Second, ofType(protocol.TypeJob))
	if got := string(p.output()); got != "out [MASKED]\n" {
		t.Errorf("stdout %q", got)
	}
	if got := string(p.stderrOutput()); got != "err [MASKED]!\n" {
		t.Errorf("stderr %q", got)
	}
}
