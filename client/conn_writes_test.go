package client_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/local"
)

// writesTransport records every write of the connections it opens.
type writesTransport struct {
	client.Transport
	mu     sync.Mutex
	writes [][]byte
}

func (t *writesTransport) Connect(ctx context.Context) (client.Conn, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &writesConn{Conn: c, t: t}, nil
}

type writesConn struct {
	client.Conn
	t *writesTransport
}

func (c *writesConn) Write(p []byte) (int, error) {
	c.t.mu.Lock()
	c.t.writes = append(c.t.writes, append([]byte(nil), p...))
	c.t.mu.Unlock()
	return c.Conn.Write(p)
}

// A connection's resume and its job reach the shim in one write (through
// Kubernetes, one message instead of two), and the job runs.
func TestResumeAndJobGoOutInOneWrite(t *testing.T) {
	shimPath, err := local.FindShim("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shim, err := local.Start(ctx, local.Config{Shim: shimPath})
	if err != nil {
		t.Fatal(err)
	}
	defer shim.Close()
	script := filepath.Join(t.TempDir(), "s.sh")
	if err := os.WriteFile(script, []byte("echo one write\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	tr := &writesTransport{Transport: shim}
	var out bytes.Buffer
	res, err := client.Run(ctx, tr, client.Job{Scripts: []string{script}}, client.Options{Output: &out})
	if err != nil || res.ExitCode != 0 || out.String() != "one write\n" {
		t.Fatalf("run: %v, exit %d, output %q", err, res.ExitCode, out.String())
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.writes) == 0 {
		t.Fatal("nothing written")
	}
	first := string(tr.writes[0])
	if !strings.Contains(first, `"cmd":"resume"`) || !strings.Contains(first, `"cmd":"job"`) {
		t.Fatalf("first write %q: want the resume and the job together", first)
	}
}
