package local_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// A script delivered as a file over the stream (several chunks, so the
// offsets and the checksum of the last one matter) runs, produces its
// output exactly, has mode 0700, and is gone once its job ended.
func TestJobFilesAreDeliveredRunAndRemoved(t *testing.T) {
	dir := t.TempDir()
	s := startShim(t, "--files-dir="+dir)
	var body bytes.Buffer
	body.WriteString("#!/bin/sh\nls -l \"$0\" | cut -c1-10\n")
	for body.Len() < 150*1024 { // more than three chunks
		body.WriteString("# padding so the script spans several file commands ....................\n")
	}
	body.WriteString("echo delivered\n")
	path := filepath.Join(dir, "step_script")
	var out syncbuf.Buffer
	res, err := client.Run(context.Background(), s, client.Job{
		Scripts: []string{path},
		Files:   []client.File{{Path: path, Content: body.Bytes()}},
	}, fastOpts(&out))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v, result %+v, output %q", err, res, out.String())
	}
	if got := out.String(); got != "-rwx------\ndelivered\n" {
		t.Fatalf("output %q", got)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the delivered file is still there after the job: %v", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 0 {
		t.Fatalf("files left in the files directory: %v", left)
	}
}

// A file outside the files directory, or to a shim without one, is refused
// with a clear error, and the job that needs it fails instead of running
// something else.
func TestJobFilesRefused(t *testing.T) {
	dir := t.TempDir()
	s := startShim(t, "--files-dir="+dir)
	outside := filepath.Join(t.TempDir(), "evil.sh")
	var out syncbuf.Buffer
	var errs []string
	opts := fastOpts(&out)
	opts.Events = func(ev client.Event) {
		if ev.Kind == client.EventShimError {
			errs = append(errs, ev.Message)
		}
	}
	res, err := client.Run(context.Background(), s, client.Job{
		Scripts: []string{outside},
		Files:   []client.File{{Path: outside, Content: []byte("echo never\n")}},
	}, opts)
	if err != nil || res.ExitCode == 0 || strings.Contains(out.String(), "never") {
		t.Fatalf("Run: %v, result %+v, output %q", err, res, out.String())
	}
	if _, err := os.Stat(outside); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file outside the files directory was written")
	}
	if len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), "not directly inside the files directory") {
		t.Fatalf("command errors %q", errs)
	}
}
