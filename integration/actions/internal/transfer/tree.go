package transfer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tether-ci/tether/integration/actions/internal/shell"
)

// Entry is one entry of a runner-host directory tree delivered into the
// job container: a directory, a regular file or a symbolic link.
type Entry struct {
	Rel  string      // slash-separated, relative to the tree's root
	Mode fs.FileMode // permission bits of a file or directory
	Size int64       // a regular file's size
	Host string      // a regular file's runner-host path (read when delivered)
	Link string      // a symlink's target ("" for other entries)
	Dir  bool
}

// ErrTooBig is Walk's error when the files hold more bytes than its
// budget allows.
var ErrTooBig = errors.New("too big")

// Walk lists the tree at root: its directories, its regular files with
// their modes and sizes, and its symlinks, parents before their contents.
// Other entries (sockets, devices) are left out. When contained, a symlink
// must stay inside the tree: an absolute target inside root becomes
// relative, one outside it or a relative one climbing out is an error. The
// files' sizes are added up; beyond budget the walk stops with an error
// wrapping ErrTooBig. A root that does not exist is an error wrapping
// fs.ErrNotExist.
func Walk(root string, budget int64, contained bool) (entries []Entry, total int64, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch t := d.Type(); {
		case t.IsDir():
			entries = append(entries, Entry{Rel: rel, Dir: true, Mode: info.Mode().Perm()})
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if contained {
				if target, err = containedLink(root, rel, target); err != nil {
					return err
				}
			}
			entries = append(entries, Entry{Rel: rel, Link: target})
		case t.IsRegular():
			total += info.Size()
			if total > budget {
				return fmt.Errorf("%w: more than %d bytes", ErrTooBig, budget)
			}
			entries = append(entries, Entry{Rel: rel, Host: p, Size: info.Size(), Mode: info.Mode().Perm()})
		}
		return nil
	})
	return entries, total, err
}

// containedLink returns the target of the symlink rel (in the tree at
// root) as it is delivered: relative targets as they are, absolute ones
// inside root made relative; a target outside the tree is an error.
func containedLink(root, rel, target string) (string, error) {
	if filepath.IsAbs(target) {
		r, err := filepath.Rel(root, target)
		if err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return "", fmt.Errorf("the symbolic link %s points to %s, outside the directory: it is not copied into the job's pod", rel, target)
		}
		target, err = filepath.Rel(filepath.Dir(filepath.Join(root, rel)), target)
		if err != nil {
			return "", err
		}
		return filepath.ToSlash(target), nil
	}
	if j := path.Join(path.Dir(rel), filepath.ToSlash(target)); j == ".." || strings.HasPrefix(j, "../") {
		return "", fmt.Errorf("the symbolic link %s points to %s, outside the directory: it is not copied into the job's pod", rel, target)
	}
	return target, nil
}

// Tree stages the files of entries and adds to the wrapper the commands
// that put the tree under the container directory dst: directories made,
// files moved into place (the move removes them from the memory-backed
// files volume) with their modes, symlinks made. Any failure runs fail (a
// quoted message).
func (s *Script) Tree(dst string, entries []Entry, fail string) error {
	for _, e := range entries {
		to := shell.Quote(dst + "/" + e.Rel)
		switch {
		case e.Dir:
			s.Printf("mkdir -p %s || fail %s\n", to, fail)
		case e.Link != "":
			s.Printf("ln -sfn %s %s || fail %s\n", shell.Quote(e.Link), to, fail)
		default:
			b, err := os.ReadFile(e.Host)
			if err != nil {
				return fmt.Errorf("read %s: %w", e.Host, err)
			}
			if int64(len(b)) != e.Size {
				return fmt.Errorf("%s changed while it was copied (%d bytes, then %d)", e.Host, e.Size, len(b))
			}
			// The shim gives a staged file mode 0700 for 0.
			src := s.Stage(b, e.Mode)
			s.Printf("mv -f %s %s || fail %s\n", src, to, fail)
			if e.Mode == 0 {
				s.Printf("chmod 0 %s || fail %s\n", to, fail)
			}
		}
	}
	return nil
}

// DirModes adds to the wrapper the chmod of every directory of entries
// whose mode is not mkdir's usual 0755, deepest first, once their
// contents are in place.
func (s *Script) DirModes(dst string, entries []Entry, fail string) {
	for _, e := range slices.Backward(entries) {
		if e.Dir && e.Mode != 0o755 {
			s.Printf("chmod %o %s || fail %s\n", e.Mode, shell.Quote(dst+"/"+e.Rel), fail)
		}
	}
}
