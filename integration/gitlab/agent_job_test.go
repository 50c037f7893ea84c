package gitlab

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The agent keeps a stage's parsed job response for the job's next
// stages while the file keeps its size and modification time, and reads
// it again when either changed, when it was written just now, or when
// JOB_RESPONSE_FILE names another file.
func TestAgentKeepsTheJobResponse(t *testing.T) {
	dir := t.TempDir()
	resp := filepath.Join(dir, "response.json")
	old := time.Now().Add(-time.Minute)
	write := func(name string, timeout int, at time.Time) {
		t.Helper()
		b := fmt.Sprintf(`{"id":1,"token":"t","runner_info":{"timeout":%d}}`, timeout)
		if err := os.WriteFile(name, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(name, at, at); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{"JOB_RESPONSE_FILE": resp}
	env := func(k string) string { return vars[k] }
	a := &agent{}
	timeout := func() time.Duration {
		t.Helper()
		j, err := a.readJob(env)
		if err != nil {
			t.Fatal(err)
		}
		return j.Timeout()
	}
	write(resp, 100, old)
	if got := timeout(); got != 100*time.Second {
		t.Fatalf("first stage: timeout %s", got)
	}
	// Same size and time, other content: the kept job is used.
	write(resp, 200, old)
	if got := timeout(); got != 100*time.Second {
		t.Fatalf("next stage: timeout %s, want the kept job's 100s", got)
	}
	// Another modification time: read again.
	write(resp, 300, old.Add(time.Second))
	if got := timeout(); got != 300*time.Second {
		t.Fatalf("after the file changed: timeout %s", got)
	}
	// Another file.
	other := filepath.Join(dir, "other.json")
	write(other, 400, old.Add(time.Second))
	vars["JOB_RESPONSE_FILE"] = other
	if got := timeout(); got != 400*time.Second {
		t.Fatalf("with another JOB_RESPONSE_FILE: timeout %s", got)
	}
	// A file written just now may be written still: read, not kept.
	write(other, 500, time.Now())
	if got := timeout(); got != 500*time.Second || a.job != nil {
		t.Fatalf("fresh file: timeout %s, kept %v", got, a.job != nil)
	}
	// A file that is gone is an error, as for gitlab.ReadJob.
	vars["JOB_RESPONSE_FILE"] = filepath.Join(dir, "missing.json")
	if _, err := a.readJob(env); err == nil {
		t.Fatal("a missing job response was read")
	}
	vars["JOB_RESPONSE_FILE"] = ""
	if _, err := a.readJob(env); err == nil {
		t.Fatal("no JOB_RESPONSE_FILE was read")
	}
}
