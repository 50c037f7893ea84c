package shim

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadShebang(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		body, interp, arg string
		ok                bool
	}{
		{"#!/bin/sh\necho\n", "/bin/sh", "", true},
		{"#!/usr/bin/env python3\n", "/usr/bin/env", "python3", true},
		{"#! /bin/bash -eu  \r\n", "/bin/bash", "-eu", true},
		{"#!/usr/bin/env -S a b\n", "/usr/bin/env", "-S a b", true},
		{"#!\t/bin/sh\tx\n", "/bin/sh", "x", true},
		{"#!\n", "", "", false},
		{"echo hi\n", "", "", false},
		{"", "", "", false},
	}
	for i, c := range cases {
		p := filepath.Join(dir, "s")
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		interp, arg, ok := readShebang(p)
		if interp != c.interp || arg != c.arg || ok != c.ok {
			t.Errorf("case %d %q: got %q %q %v, want %q %q %v", i, c.body, interp, arg, ok, c.interp, c.arg, c.ok)
		}
	}
	if _, _, ok := readShebang(filepath.Join(dir, "missing")); ok {
		t.Error("a missing file has a shebang")
	}
}

func TestArgvPicksShell(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s")
	if err := os.WriteFile(script, []byte("#!/bin/sh -e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &runner{shell: "/bin/bash"}
	if prog, args, code, _ := r.argv(script, ""); prog != "/bin/sh" || len(args) != 3 || args[1] != "-e" || code != 0 {
		t.Errorf("shebang: %s %q %d", prog, args, code)
	}
	if prog, _, _, _ := r.argv(script, "/bin/sh"); prog != "/bin/sh" {
		t.Errorf("job shell: %s", prog)
	}
	r.explicitShell = true
	if prog, args, _, _ := r.argv(script, ""); prog != "/bin/bash" || len(args) != 2 {
		t.Errorf("--shell: %s %q", prog, args)
	}
	if _, _, code, msg := r.argv(script, "/no/such/shell"); code != codeNotFound || msg == "" {
		t.Errorf("missing job shell: %d %q", code, msg)
	}
}
