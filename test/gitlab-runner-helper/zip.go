package main

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// writeZip writes the set's files as a zip (the runner's archive/zip
// archiver: relative names, directories with a trailing slash, modes and
// modification times kept, symlinks stored as their target).
func writeZip(ctx context.Context, w io.Writer, s *fileSet) error {
	zw := zip.NewWriter(w)
	for _, name := range s.sorted() {
		if err := ctx.Err(); err != nil {
			return err
		}
		fi := s.files[name]
		h, err := zip.FileInfoHeader(fi)
		if err != nil {
			return fmt.Errorf("zip header of %s: %w", name, err)
		}
		h.Name = filepath.ToSlash(name)
		if fi.IsDir() {
			h.Name += "/"
			if _, err := zw.CreateHeader(h); err != nil {
				return fmt.Errorf("zip %s: %w", name, err)
			}
			continue
		}
		h.Method = zip.Deflate
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return fmt.Errorf("zip %s: %w", name, err)
		}
		p := filepath.Join(s.wd, name)
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("zip %s: %w", name, err)
			}
			if _, err := io.WriteString(fw, target); err != nil {
				return fmt.Errorf("zip %s: %w", name, err)
			}
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("zip %s: %w", name, err)
		}
		_, err = io.Copy(fw, f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("zip %s: %w", name, err)
		}
	}
	return zw.Close()
}

// extractZip extracts the zip at path into dir; an entry that would land
// outside dir is an error.
func extractZip(ctx context.Context, l *logger, path, dir string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return fmt.Errorf("open archive %s: %w", path, err)
	}
	defer func() { _ = zr.Close() }()
	for _, f := range zr.File {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := filepath.FromSlash(f.Name)
		target := filepath.Join(dir, name)
		if rel, err := filepath.Rel(dir, target); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("archive entry %q is outside %s", f.Name, dir)
		}
		if err := extractOne(f, target); err != nil {
			l.warning("%s: %v", f.Name, err)
			continue
		}
	}
	return nil
}

func extractOne(f *zip.File, target string) error {
	mode := f.Mode()
	if mode.IsDir() {
		if err := os.MkdirAll(target, 0o777); err != nil {
			return err
		}
		return os.Chmod(target, mode.Perm())
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o777); err != nil {
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	_ = os.Remove(target)
	if mode&os.ModeSymlink != 0 {
		b, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		return os.Symlink(string(b), target)
	}
	out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, rc); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(target, f.Modified, f.Modified)
}
