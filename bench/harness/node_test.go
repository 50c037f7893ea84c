package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// firstLine hands on the pod's name however the CLI's writes split it,
// and everything after it unchanged.
func TestFirstLineSplitsThePodName(t *testing.T) {
	for _, writes := range [][]string{
		{"tether-abc\n", ".", ".."},
		{"tether-", "abc\n..", "."},
		{"tether-abc\n..."},
	} {
		var rest bytes.Buffer
		f := &firstLine{line: make(chan string, 1), rest: &rest}
		for _, w := range writes {
			if n, err := f.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		select {
		case name := <-f.line:
			if name != "tether-abc" {
				t.Errorf("%q: name %q, want tether-abc", writes, name)
			}
		default:
			t.Fatalf("%q: no name", writes)
		}
		if rest.String() != "..." {
			t.Errorf("%q: rest %q, want ...", writes, rest.String())
		}
	}
}

// The images follow TETHER_IMAGE_TAG, the development tag by default.
func TestImagesTagged(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if im := imagesTagged(getenv); im.build != "localhost/tether/busybox:dev" || im.helper != "ghcr.io/tether-ci/tether-shim:dev" {
		t.Errorf("default images %+v", im)
	}
	env["TETHER_IMAGE_TAG"] = "mine"
	if im := imagesTagged(getenv); im.build != "localhost/tether/busybox:mine" || im.helper != "ghcr.io/tether-ci/tether-shim:mine" {
		t.Errorf("tagged images %+v", im)
	}
}

// A held job's script sleeps before its last output and prints exactly what
// the unheld one does; the latency script with hostname prints the name
// first.
func TestNodeScripts(t *testing.T) {
	script, want := concurrentScript(7, 0)
	held, heldWant := concurrentScript(7, time.Second)
	if !bytes.Equal(want, heldWant) || !strings.Contains(string(held), "sleep 1\n") || strings.Contains(string(script), "sleep") {
		t.Fatalf("held script %q (want %q), unheld %q", held, heldWant, script)
	}
	for _, s := range [][]byte{script, held} {
		out, err := exec.Command("sh", "-c", string(s)).Output()
		if err != nil || !bytes.Equal(out, want) {
			t.Fatalf("script output %q, %v; want %q", out, err, want)
		}
	}
	if s := string(kubeLatencyScript(true)); !strings.HasPrefix(s, "#!/bin/sh\nhostname\n") {
		t.Errorf("latency script with hostname: %q", s)
	}
	if s := string(kubeLatencyScript(false)); strings.Contains(s, "hostname") {
		t.Errorf("latency script without hostname: %q", s)
	}
}
