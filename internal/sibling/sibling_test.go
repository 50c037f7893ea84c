package sibling

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The test binary's own directory holds the program: Find returns it
// before anything on PATH.
func TestFindBesideTheRunningProgram(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := "sibling-test-program"
	want := filepath.Join(filepath.Dir(self), name)
	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(want) })
	onPath := t.TempDir()
	if err := os.WriteFile(filepath.Join(onPath, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onPath)
	if got, err := Find(name); err != nil || got != want {
		t.Errorf("Find = %q, %v; want %q", got, err, want)
	}
}

// A file beside it that cannot be run is passed over for PATH's; nowhere
// at all is exec.ErrNotFound.
func TestFindOnPathElseNotFound(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := "sibling-test-plain-file"
	plain := filepath.Join(filepath.Dir(self), name)
	if err := os.WriteFile(plain, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(plain) })
	onPath := t.TempDir()
	want := filepath.Join(onPath, name)
	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onPath)
	if got, err := Find(name); err != nil || got != want {
		t.Errorf("Find = %q, %v; want %q from PATH", got, err, want)
	}
	t.Setenv("PATH", t.TempDir())
	if got, err := Find(name); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Find = %q, %v; want exec.ErrNotFound", got, err)
	}
}
