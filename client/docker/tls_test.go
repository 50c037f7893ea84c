package docker_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/docker"
	"github.com/tether-ci/tether/internal/testing/syncbuf"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as ca.pem, cert.pem (client), key.pem (client).
type testPKI struct {
	dir    string
	server tls.Certificate
	pool   *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tether test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, server bool) ([]byte, *ecdsa.PrivateKey) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "tether test"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		if server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	pemOf := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	keyPEM := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pemOf("EC PRIVATE KEY", b)
	}
	p := &testPKI{dir: t.TempDir(), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	srvDER, srvKey := issue(2, true)
	if p.server, err = tls.X509KeyPair(pemOf("CERTIFICATE", srvDER), keyPEM(srvKey)); err != nil {
		t.Fatal(err)
	}
	cliDER, cliKey := issue(3, false)
	for name, data := range map[string][]byte{"ca.pem": pemOf("CERTIFICATE", caDER), "cert.pem": pemOf("CERTIFICATE", cliDER), "key.pem": keyPEM(cliKey)} {
		if err := os.WriteFile(filepath.Join(p.dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// tlsFront listens on 127.0.0.1 with TLS (client certificates required)
// and relays each connection to the engine's unix socket.
func tlsFront(t *testing.T, p *testPKI, socket string) (addr string, conns *atomic.Int64) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{p.server},
		ClientCAs: p.pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	conns = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if err := c.(*tls.Conn).Handshake(); err != nil {
					return
				}
				conns.Add(1)
				up, err := net.Dial("unix", socket)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return ln.Addr().String(), conns
}

// The engine reached over tcp:// with TLS and client certificates, named by
// the DOCKER_* variables or by a docker context, runs a job end to end
// (API calls, attach and exec streams).
func TestEngineOverTCPWithTLS(t *testing.T) {
	needEngine(t)
	pki := newTestPKI(t)
	addr, conns := tlsFront(t, pki, env.engine.Socket)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"environment", func(t *testing.T) {
			t.Setenv("DOCKER_HOST", "tcp://"+addr)
			t.Setenv("DOCKER_TLS_VERIFY", "1")
			t.Setenv("DOCKER_CERT_PATH", pki.dir)
		}},
		{"context", func(t *testing.T) {
			cfg := t.TempDir()
			sum := sha256.Sum256([]byte("tls-test"))
			id := hex.EncodeToString(sum[:])
			meta := `{"Name":"tls-test","Metadata":{},"Endpoints":{"docker":{"Host":"tcp://` + addr + `","SkipTLSVerify":false}}}`
			files := map[string]string{
				"config.json": `{"currentContext":"tls-test"}`,
				filepath.Join("contexts", "meta", id, "meta.json"): meta,
			}
			for _, n := range []string{"ca.pem", "cert.pem", "key.pem"} {
				b, err := os.ReadFile(filepath.Join(pki.dir, n))
				if err != nil {
					t.Fatal(err)
				}
				files[filepath.Join("contexts", "tls", id, "docker", n)] = string(b)
			}
			for name, data := range files {
				p := filepath.Join(cfg, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("DOCKER_HOST", "")
			t.Setenv("DOCKER_CONTEXT", "")
			t.Setenv("DOCKER_CONFIG", cfg)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			before := conns.Load()
			c, err := docker.NewClient("")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Host() != "tcp://"+addr {
				t.Fatalf("host %q, want tcp://%s", c.Host(), addr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			ct, err := c.StartJob(ctx, docker.Spec{Image: env.busybox, ShimBinary: env.shim,
				Scripts: []docker.Script{{Name: "s.sh", Data: []byte("echo over tls\n")}}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = ct.Remove(context.Background()) }()
			var out syncbuf.Buffer
			res, err := client.Run(ctx, ct, client.Job{Scripts: []string{docker.ScriptPath("s.sh")}}, client.Options{Output: &out, ExitShim: true})
			if err != nil || res.ExitCode != 0 || out.String() != "over tls\n" {
				t.Fatalf("Run: %v, exit %d, output %q", err, res.ExitCode, out.String())
			}
			if conns.Load() == before {
				t.Fatal("no connection went through the TLS endpoint")
			}
		})
	}
}
