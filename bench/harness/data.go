package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// shape is a kind of script output.
type shape struct {
	name  string
	label string
	// unit is repeated to fill the data file.
	unit []byte
}

// shapes returns the two output shapes the performance targets name.
func shapes() []shape {
	line := []byte("0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ build step ok\n")
	return []shape{
		{name: "nonewline", label: "no newlines", unit: []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")},
		{name: "lines80", label: "80-byte lines", unit: line},
	}
}

// chunkSize is the size of a shape's data file; scripts cat it as often as
// needed.
const chunkSize = 64 << 20

// workspace is the harness's scratch directory: data files and scripts.
type workspace struct {
	dir string
}

func newWorkspace() (*workspace, error) {
	dir, err := os.MkdirTemp("", "tether-bench-")
	if err != nil {
		return nil, fmt.Errorf("create the bench scratch directory: %w", err)
	}
	return &workspace{dir: dir}, nil
}

func (w *workspace) close() error { return os.RemoveAll(w.dir) }

func (w *workspace) path(name string) string { return filepath.Join(w.dir, name) }

// dataFile writes (once) the shape's data file: whole units up to about
// chunkSize bytes. It returns its path and size.
func (w *workspace) dataFile(s shape) (string, int64, error) {
	p := w.path("data-" + s.name)
	n := chunkSize / len(s.unit)
	if st, err := os.Stat(p); err == nil && st.Size() == int64(n*len(s.unit)) {
		return p, st.Size(), nil
	}
	data := bytes.Repeat(s.unit, n)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return "", 0, fmt.Errorf("write bench data file: %w", err)
	}
	return p, int64(len(data)), nil
}

// relayScript writes a script that prints exactly total bytes of the shape:
// the data file as many times as it fits, then the rest of it with head.
func (w *workspace) relayScript(s shape, total int64) (string, error) {
	data, size, err := w.dataFile(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# prints " + fmt.Sprint(total) + " bytes\n")
	full, rest := total/size, total%size
	const perLine = 64
	for i := int64(0); i < full; i += perLine {
		b.WriteString("cat")
		for j := i; j < min(full, i+perLine); j++ {
			b.WriteString(" " + shellQuote(data))
		}
		b.WriteString(" || exit 1\n")
	}
	if rest > 0 {
		fmt.Fprintf(&b, "head -c %d %s || exit 1\n", rest, shellQuote(data))
	}
	return w.script(fmt.Sprintf("relay-%s-%d.sh", s.name, total), b.String())
}

// script writes an executable script and returns its path.
func (w *workspace) script(name, body string) (string, error) {
	p := w.path(name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		return "", fmt.Errorf("write bench script %s: %w", name, err)
	}
	return p, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
