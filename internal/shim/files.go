package shim

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether-ci/tether/internal/sha256sum"
	"github.com/tether-ci/tether/protocol"
)

// fileSink writes the files that file commands deliver into the files
// directory (a memory-backed volume in a pod): chunk by chunk into a
// temporary file, checked against the sha256 of the last chunk, then
// renamed into place. Only the serve loop uses it.
type fileSink struct {
	dir     string
	partial map[string]*partialFile
}

// partialFile is a file whose last chunk has not arrived yet.
type partialFile struct {
	f       *os.File
	written int64
	sum     hash.Hash
}

// inside returns the cleaned path if it lies inside the files directory.
func (fs *fileSink) inside(path string) (string, error) {
	if fs.dir == "" {
		return "", errors.New("this shim accepts no files: start tether-shim with --files-dir DIR")
	}
	clean := filepath.Clean(path)
	if rel, err := filepath.Rel(fs.dir, clean); err != nil || rel == "." || strings.HasPrefix(rel, "..") || strings.Contains(rel, "/") {
		return "", fmt.Errorf("file %s is not directly inside the files directory %s", path, fs.dir)
	}
	return clean, nil
}

// write handles one file command.
func (fs *fileSink) write(c protocol.Command) error {
	path, err := fs.inside(c.Path)
	if err != nil {
		return err
	}
	data, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return fmt.Errorf("file %s: the chunk is not base64: %w", path, err)
	}
	if fs.partial == nil {
		fs.partial = map[string]*partialFile{}
	}
	p := fs.partial[path]
	if c.Offset == 0 {
		fs.drop(path)
		f, err := os.CreateTemp(fs.dir, "."+filepath.Base(path)+".part-*")
		if err != nil {
			return fmt.Errorf("file %s: %w", path, err)
		}
		p = &partialFile{f: f, sum: sha256sum.New()}
		fs.partial[path] = p
	}
	if p == nil || p.written != c.Offset {
		have := int64(0)
		if p != nil {
			have = p.written
		}
		fs.drop(path)
		return fmt.Errorf("file %s: a chunk at offset %d, but %d bytes arrived before it (resend the file from offset 0)", path, c.Offset, have)
	}
	if _, err := p.f.Write(data); err != nil {
		fs.drop(path)
		return fmt.Errorf("file %s: %w", path, err)
	}
	p.sum.Write(data)
	p.written += int64(len(data))
	if c.SHA256 == "" {
		return nil
	}
	defer delete(fs.partial, path)
	if got := hex.EncodeToString(p.sum.Sum(nil)); !strings.EqualFold(got, c.SHA256) {
		fs.drop(path)
		return fmt.Errorf("file %s: sha256 %s of the %d bytes received differs from the sender's %s: not written", path, got, p.written, c.SHA256)
	}
	mode := os.FileMode(0o700)
	if c.Mode != 0 {
		mode = os.FileMode(c.Mode)
	}
	name := p.f.Name()
	err = errors.Join(p.f.Chmod(mode), p.f.Close())
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("file %s: %w", path, err)
	}
	return nil
}

// drop forgets a partial file and removes its temporary file.
func (fs *fileSink) drop(path string) {
	if p := fs.partial[path]; p != nil {
		p.f.Close()
		os.Remove(p.f.Name())
		delete(fs.partial, path)
	}
}

// remove deletes delivered files once the job that used them ended.
func removeFiles(dir string, paths []string) []error {
	sink := fileSink{dir: dir}
	var errs []error
	for _, p := range paths {
		clean, err := sink.inside(p)
		if err == nil {
			err = os.Remove(clean)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errs
}
