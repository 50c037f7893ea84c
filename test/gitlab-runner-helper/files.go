package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// fileSet is the runner's fileArchiver (commands/helpers/file_archiver.go):
// the files and directories named by --path globs, --untracked and
// --exclude, as paths relative to the working directory.
type fileSet struct {
	wd    string
	files map[string]os.FileInfo
}

// enumerate collects what paths, untracked and exclude name, logging as the
// runner does ("PATH: found N matching artifact files and directories").
func enumerate(l *logger, wd string, paths []string, untracked bool, exclude []string) (*fileSet, error) {
	s := &fileSet{wd: wd, files: map[string]os.FileInfo{}}
	for _, p := range paths {
		s.processPath(l, p)
	}
	if untracked {
		s.processUntracked(l)
	}
	for _, rule := range exclude {
		n := 0
		for f := range s.files {
			if ok, _ := filepath.Match(rule, f); ok || f == rule || strings.HasPrefix(f, strings.TrimSuffix(rule, "/")+"/") {
				delete(s.files, f)
				n++
			}
		}
		l.info("%s: excluded %d files", rule, n)
	}
	return s, nil
}

func (s *fileSet) processPath(l *logger, pattern string) {
	if pattern == "" {
		l.warning("No matching files. Path is empty.")
		return
	}
	abs := pattern
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(s.wd, pattern)
	}
	matches, err := filepath.Glob(abs)
	if err != nil {
		l.warning("processPath: %v", err)
		return
	}
	found := 0
	for _, m := range matches {
		err := filepath.Walk(m, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if s.add(l, p, fi) {
				found++
			}
			return nil
		})
		if err != nil {
			l.warning("Walking %s %v", m, err)
		}
	}
	if found == 0 {
		l.warning("%s: no matching files. Ensure that the artifact path is relative to the working directory (%s)", pattern, s.wd)
		return
	}
	l.info("%s: found %d matching artifact files and directories", pattern, found)
}

// add records p if it lies inside the working directory.
func (s *fileSet) add(l *logger, p string, fi os.FileInfo) bool {
	rel, err := filepath.Rel(s.wd, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		l.warning("%s: artifact path is not a subpath of project directory: %s", p, s.wd)
		return false
	}
	if rel == "." {
		return false
	}
	s.files[rel] = fi
	return true
}

// processUntracked adds what `git ls-files -o` lists, as the runner does.
func (s *fileSet) processUntracked(l *logger) {
	cmd := exec.Command("git", "ls-files", "-o", "-z")
	cmd.Dir = s.wd
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		l.warning("untracked: %v", err)
		return
	}
	found := 0
	for _, f := range strings.Split(out.String(), "\x00") {
		if f == "" {
			continue
		}
		fi, err := os.Lstat(filepath.Join(s.wd, f))
		if err != nil {
			l.warning("%v", err)
			continue
		}
		if s.add(l, filepath.Join(s.wd, f), fi) {
			found++
		}
	}
	if found == 0 {
		l.warning("untracked: no files")
		return
	}
	l.info("untracked: found %d files", found)
}

// changedSince is the runner's isFileChanged: true unless the archive
// exists and no file of the set is newer than it (a file removed since does
// not count, as in the runner).
func (s *fileSet) changedSince(l *logger, archive string) bool {
	ai, err := os.Stat(archive)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			l.warning("%v", err)
		}
		return true
	}
	for _, fi := range s.files {
		if ai.ModTime().Before(fi.ModTime()) {
			return true
		}
	}
	return false
}

// sorted returns the relative paths in archive order.
func (s *fileSet) sorted() []string {
	names := make([]string, 0, len(s.files))
	for f := range s.files {
		names = append(names, f)
	}
	sort.Strings(names)
	return names
}
