package gitlab

import (
	"net"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
)

// A stage's clock keeps each step's first time, in the order they
// happened; its connection marks the first write and the first bytes
// read; steps that did not happen are left out of the record; the nil
// clock times nothing.
func TestStageClockSteps(t *testing.T) {
	var none *stageClock
	none.mark(stepReady) // no panic: a stage outside the agent

	c := newStageClock(time.Now())
	c.mark(stepSettings)
	c.mark(stepReady)
	shim, agent := net.Pipe()
	defer shim.Close()
	conn := &clockedConn{Conn: pipeConn{agent}, clock: c}
	go func() {
		buf := make([]byte, 16)
		n, _ := shim.Read(buf)
		_, _ = shim.Write(buf[:n])
	}()
	if _, err := conn.Write([]byte("job\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	c.event(client.Event{Kind: client.EventScriptBegin})
	time.Sleep(time.Millisecond)
	first := c.at[stepBegin]
	c.event(client.Event{Kind: client.EventScriptBegin}) // a later one keeps the first
	if c.at[stepBegin] != first {
		t.Fatal("a second begin record moved the step")
	}
	attrs := c.attrs()
	var names []string
	for i, a := range attrs {
		names = append(names, a.Key)
		if d := a.Value.Duration(); d <= 0 || (i > 0 && d < attrs[i-1].Value.Duration()) {
			t.Fatalf("step %s at %s, after %v", a.Key, d, attrs[:i])
		}
	}
	want := []string{"settings", "ready", "job_sent", "first_bytes", "script_begin"}
	if len(names) != len(want) {
		t.Fatalf("steps %q, want %q (no status, no exit)", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("steps %q, want %q", names, want)
		}
	}
}
