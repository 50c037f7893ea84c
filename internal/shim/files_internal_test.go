package shim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/protocol"
)

func fileCmd(path string, off int64, data string, final string) protocol.Command {
	return protocol.Command{Cmd: protocol.CmdFile, Path: path, Offset: off, Data: base64.StdEncoding.EncodeToString([]byte(data)), SHA256: final}
}

func TestFileSink(t *testing.T) {
	dir := t.TempDir()
	sink := fileSink{dir: dir}
	path := filepath.Join(dir, "s.sh")
	sum := sha256.Sum256([]byte("hello world"))
	good := hex.EncodeToString(sum[:])
	if err := sink.write(fileCmd(path, 0, "hello ", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("the file is in place before its last chunk")
	}
	if err := sink.write(fileCmd(path, 6, "world", good)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "hello world" {
		t.Fatalf("content %q", b)
	}
	for _, tc := range []struct {
		cmds []protocol.Command
		want string
	}{
		{[]protocol.Command{fileCmd(path, 0, "hello ", ""), fileCmd(path, 7, "world", good)}, "at offset 7, but 6 bytes arrived"},
		{[]protocol.Command{fileCmd(path, 0, "hello there", good)}, "differs from the sender's"},
		{[]protocol.Command{fileCmd(filepath.Join(dir, "sub", "x"), 0, "x", good)}, "not directly inside"},
		{[]protocol.Command{fileCmd("/etc/passwd", 0, "x", good)}, "not directly inside"},
		{[]protocol.Command{fileCmd(filepath.Join(dir, "..", "x"), 0, "x", good)}, "not directly inside"},
	} {
		var err error
		for _, c := range tc.cmds {
			if err = sink.write(c); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	// The failed deliveries left no temporary files, and the good file kept
	// its content.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files directory holds %v", entries)
	}
	if b, _ := os.ReadFile(path); string(b) != "hello world" {
		t.Fatalf("content %q after failed deliveries", b)
	}
	if err := (&fileSink{}).write(fileCmd("/x", 0, "x", good)); err == nil || !strings.Contains(err.Error(), "--files-dir") {
		t.Fatalf("no files dir: %v", err)
	}
}
