package shim_test

import (
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// A masked value printed whole, split across two printfs 100 ms apart (two
// separate flushes), and URL-encoded never appears in the record stream or
// the spool file; [MASKED] does. Values come from the shim's environment
// (--mask-env) and over stdin (the mask command and a job's mask field).
func TestMaskedValuesNeverLeaveTheShim(t *testing.T) {
	const fromEnv, fromCmd, fromJob = "env-secret-1234", "cmd:secret/5678 x", "job-secret-9012"
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	body := ""
	for _, v := range []string{fromEnv, fromCmd, fromJob} {
		half := len(v) / 2
		body += "echo 'whole " + v + "'\n" +
			"printf '%s' 'split " + v[:half] + "'; sleep 0.1; printf '%s\\n' '" + v[half:] + "'\n" +
			"echo 'encoded " + url.QueryEscape(v) + " " + url.PathEscape(v) + "'\n"
	}
	s := script(t, dir, "leak.sh", body)
	p := startShim(t, []string{"--spool-dir", spool, "--mask-env", "JOB_TOKEN"}, func(c *exec.Cmd) {
		c.Env = append(c.Env, "JOB_TOKEN="+fromEnv)
	})
	p.send(protocol.Command{Cmd: protocol.CmdMask, Mask: []string{fromCmd}},
		protocol.Command{Cmd: protocol.CmdJob, ID: "m", Scripts: []string{s}, Mask: []string{fromJob}},
		protocol.Command{Cmd: protocol.CmdExit})
	p.waitExit(20 * time.Second)
	out := p.output()
	spooled, err := os.ReadFile(filepath.Join(spool, "records"))
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	var raw bytes.Buffer
	for _, r := range p.records {
		raw.Write(r.Payload)
		raw.WriteByte('\n')
	}
	p.mu.Unlock()
	for _, v := range []string{fromEnv, fromCmd, fromJob} {
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v), v[:len(v)/2+1]} {
			for what, b := range map[string][]byte{"output": out, "spool file": spooled, "record payloads": raw.Bytes()} {
				if bytes.Contains(b, []byte(form)) {
					t.Errorf("%s contains %q", what, form)
				}
			}
		}
	}
	if n := strings.Count(string(out), "[MASKED]"); n != 3*4 {
		t.Fatalf("output has %d [MASKED], want 12:\n%s", n, out)
	}
}

// A value shorter than 8 bytes is refused: in a command with an error
// record that does not echo it, and in --mask-env at start.
func TestShortMaskValuesAreRefused(t *testing.T) {
	p := startShim(t, nil)
	p.sendRaw(`{"cmd":"mask","mask":["abc123"]}` + "\n")
	r, _ := p.waitRecord(0, 10*time.Second, ofType(protocol.TypeError))
	if !strings.Contains(string(r.Payload), "too short to mask safely") || strings.Contains(string(r.Payload), "abc123") {
		t.Fatalf("error record %s", r.Payload)
	}
	cmd := exec.Command(shimBin, "--mask-env", "SHORT")
	cmd.Env = append(os.Environ(), "SHORT=abc")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "too short to mask safely") || strings.Contains(string(out), "abc\n") {
		t.Fatalf("shim with a short --mask-env value: %v %s", err, out)
	}
}
