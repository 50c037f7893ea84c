package kube_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/testing/attachserver"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
	"github.com/tether-ci/tether/internal/version"
)

// TestUserAgentOnEveryRequest: a configuration from LoadConfig sends its
// User-Agent with every kind of request a transport makes: the pod read,
// the attach upgrade (WebSocket, and SPDY through client-go) and pods/log.
func TestUserAgentOnEveryRequest(t *testing.T) {
	for _, tc := range []struct {
		name, userAgent, want string
		proto                 kube.Protocol
		attachKind            string
	}{
		{"websocket", "", version.UserAgent(""), kube.ProtocolWebSocket, "attach-websocket"},
		{"spdy", version.UserAgent("unit"), version.UserAgent("unit"), kube.ProtocolSPDY, "attach-spdy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, attachserver.Options{})
			e.shim(t, "ua")
			path := filepath.Join(e.dir, "kubeconfig")
			kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"" + e.srv.URL + "\"}\n" +
				"contexts:\n- name: c\n  context: {cluster: c, namespace: " + ns + "}\ncurrent-context: c\n"
			if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, _, err := kube.LoadConfig(kube.ConfigOptions{Kubeconfig: path, UserAgent: tc.userAgent})
			if err != nil {
				t.Fatal(err)
			}
			tr := &kube.Transport{Config: cfg, Namespace: ns, Pod: "ua", Container: kube.BuildContainer,
				Options: kube.TransportOptions{Protocol: tc.proto, Logger: testLogger(t), ConnectTimeout: 3 * time.Second}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run := e.script(t, "run.sh", "echo hi\n")
			out := &syncbuf.Buffer{}
			if _, err := client.Run(ctx, tr, client.Job{Scripts: []string{run}}, sessionOptions(t, out, &eventLog{})); err != nil {
				t.Fatalf("Run: %v", err)
			}
			rc, err := tr.OpenLog(ctx)
			if err != nil {
				t.Fatalf("OpenLog: %v", err)
			}
			_, _ = io.Copy(io.Discard, rc)
			_ = rc.Close()
			got := e.srv.UserAgents()
			for _, kind := range []string{"pod", tc.attachKind, "log"} {
				if len(got[kind]) == 0 {
					t.Errorf("no %s request reached the server (requests: %v)", kind, got)
				}
			}
			for kind, uas := range got {
				for _, ua := range uas {
					if ua != tc.want {
						t.Errorf("a %s request had User-Agent %q, want %q", kind, ua, tc.want)
					}
				}
			}
		})
	}
}
