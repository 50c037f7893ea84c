package client

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/tether-ci/tether/protocol"
)

// File is a file delivered to the shim over its own stdin, before the job
// that uses it (a script generated per job, say): it is never stored in a
// ConfigMap, a Secret or anywhere else in the cluster. The shim writes it
// atomically into its files directory (tether-shim --files-dir; a
// memory-backed volume in a pod) after checking its sha256, and deletes it
// once the job ended.
type File struct {
	// Path is where the shim writes the file: directly inside its files
	// directory.
	Path string
	// Content is the file's content.
	Content []byte
	// Mode is the file's permission bits; 0 means 0700.
	Mode os.FileMode
}

// fileCommands returns the file commands that deliver f: chunks of at most
// protocol.MaxFileChunk bytes, the last one carrying the sha256.
func fileCommands(f File) ([]protocol.Command, error) {
	if f.Mode&^0o777 != 0 {
		return nil, fmt.Errorf("file %s: mode %v has bits beyond 0777", f.Path, f.Mode)
	}
	sum := sha256.Sum256(f.Content)
	var cmds []protocol.Command
	for off := 0; ; off += protocol.MaxFileChunk {
		end := min(off+protocol.MaxFileChunk, len(f.Content))
		c := protocol.Command{Cmd: protocol.CmdFile, Path: f.Path, Offset: int64(off), Mode: uint32(f.Mode),
			Data: base64.StdEncoding.EncodeToString(f.Content[off:end])}
		if end == len(f.Content) {
			c.SHA256 = hex.EncodeToString(sum[:])
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("file %s: %w", f.Path, err)
		}
		cmds = append(cmds, c)
		if end == len(f.Content) {
			return cmds, nil
		}
	}
}

// jobLines returns the command lines that submit a job: its files' chunks,
// then the job command, sent as one write so nothing else comes between.
func jobLines(files []protocol.Command, job protocol.Command) ([]byte, error) {
	var b []byte
	var err error
	for _, c := range files {
		if b, err = protocol.AppendCommand(b, c); err != nil {
			return nil, err
		}
	}
	return protocol.AppendCommand(b, job)
}
