package transfer

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The listing script, run by a real sh over real files, lists them so
// that ParseListing gets every byte back: binary content, no final
// newline, an empty file, a path with a space; a missing file is absent.
func TestListScriptRoundTrip(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		filepath.Join(dir, "env"):        []byte("A=1\nB<<EOF\nx\nEOF\n"),
		filepath.Join(dir, "with space"): {0, 1, 2, '\n', 0xff, 'E', 'N', 'D', '\n'},
		filepath.Join(dir, "empty"):      {},
		filepath.Join(dir, "no-newline"): []byte("last line"),
	}
	paths := []string{filepath.Join(dir, "missing")}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command("sh", "-c", string(ListScript(paths))).Output()
	if err != nil {
		t.Fatalf("collect script: %v", err)
	}
	got, _, _, err := ParseListing(out)
	if err != nil {
		t.Fatalf("%v\n%q", err, out)
	}
	if len(got) != len(files) {
		t.Fatalf("got %d files, want %d", len(got), len(files))
	}
	for p, want := range files {
		if !bytes.Equal(got[p], want) {
			t.Errorf("%s: %q, want %q", p, got[p], want)
		}
	}
}

// Anything that does not add up is an error, never a partial result.
func TestParseListingRefusesDamage(t *testing.T) {
	const sumHi = "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4" // sha256("hi")
	for name, in := range map[string]string{
		"no END":        "F 2 - /a\nhi\n",
		"short":         "F 5 - /a\nhi\nEND\n",
		"long":          "F 1 - /a\nhi\nEND\n",
		"bad sum":       "F 2 " + strings.Repeat("0", 64) + " /a\nhi\nEND\n",
		"garbage":       "hello\nEND\n",
		"bad header":    "F 2\nhi\nEND\n",
		"negative size": "F -1 - /a\nEND\n",
	} {
		if _, _, _, err := ParseListing([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	got, _, _, err := ParseListing([]byte("F 2 " + sumHi + " /a b\nhi\nM /c\nEND\n"))
	if err != nil || string(got["/a b"]) != "hi" || len(got) != 1 {
		t.Fatalf("got %q, %v", got, err)
	}
}
