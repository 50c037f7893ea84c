package actions

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
)

// treeEntry is one entry of a runner-host directory tree delivered into
// the job container: a directory, a regular file or a symbolic link.
type treeEntry struct {
	rel  string      // slash-separated, relative to the tree's root
	mode fs.FileMode // permission bits of a file or directory
	size int64       // a regular file's size
	host string      // a regular file's runner-host path (read when delivered)
	link string      // a symlink's target ("" for other entries)
	dir  bool
}

// errTreeTooBig is walkTree's error when the files hold more bytes than
// its budget allows.
var errTreeTooBig = errors.New("too big")

// walkTree lists the tree at root: its directories, its regular files with
// their modes and sizes, and its symlinks, parents before their contents.
// Other entries (sockets, devices) are left out. When contained, a symlink
// must stay inside the tree: an absolute target inside root becomes
// relative, one outside it or a relative one climbing out is an error. The
// files' sizes are added up; beyond budget the walk stops with an error
// wrapping errTreeTooBig. A root that does not exist is an error wrapping
// fs.ErrNotExist.
func walkTree(root string, budget int64, contained bool) (entries []treeEntry, total int64, err error) {
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
			entries = append(entries, treeEntry{rel: rel, dir: true, mode: info.Mode().Perm()})
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
			entries = append(entries, treeEntry{rel: rel, link: target})
		case t.IsRegular():
			total += info.Size()
			if total > budget {
				return fmt.Errorf("%w: more than %d bytes", errTreeTooBig, budget)
			}
			entries = append(entries, treeEntry{rel: rel, host: p, size: info.Size(), mode: info.Mode().Perm()})
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

// writeTree adds entries of a tree to job as files staged in the shim's
// files dir, and to the wrapper w the commands that put them under the
// container directory dst: directories made, files moved into place (the
// shim checked each one's size and sha256 when it arrived; the move
// removes it from the memory-backed files volume) with their modes,
// symlinks made. Any failure runs fail (a quoted message).
func writeTree(job *client.Job, w *strings.Builder, dst string, entries []treeEntry, fail string) error {
	for _, e := range entries {
		to := shell.Quote(dst + "/" + e.rel)
		switch {
		case e.dir:
			fmt.Fprintf(w, "mkdir -p %s || fail %s\n", to, fail)
		case e.link != "":
			fmt.Fprintf(w, "ln -sfn %s %s || fail %s\n", shell.Quote(e.link), to, fail)
		default:
			b, err := os.ReadFile(e.host)
			if err != nil {
				return fmt.Errorf("read %s: %w", e.host, err)
			}
			if int64(len(b)) != e.size {
				return fmt.Errorf("%s changed while it was copied (%d bytes, then %d)", e.host, e.size, len(b))
			}
			// The shim gives a staged file mode 0700 for 0.
			src := stageFile(job, b, e.mode)
			fmt.Fprintf(w, "mv -f %s %s || fail %s\n", src, to, fail)
			if e.mode == 0 {
				fmt.Fprintf(w, "chmod 0 %s || fail %s\n", to, fail)
			}
		}
	}
	return nil
}

// writeDirModes adds to w the chmod of every directory of entries whose
// mode is not mkdir's usual 0755, deepest first, once their contents are
// in place.
func writeDirModes(w *strings.Builder, dst string, entries []treeEntry, fail string) {
	for _, e := range slices.Backward(entries) {
		if e.dir && e.mode != 0o755 {
			fmt.Fprintf(w, "chmod %o %s || fail %s\n", e.mode, shell.Quote(dst+"/"+e.rel), fail)
		}
	}
}
