package dockerengine

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// Endpoint is where an engine answers and how to reach it.
type Endpoint struct {
	// Host is "unix:///path" or "tcp://host:port".
	Host string
	// TLS, when not nil, secures a tcp:// connection.
	TLS *tls.Config
	// From says where the endpoint came from, for messages.
	From string
}

// ResolveEndpoint finds the engine the way the docker CLI does: host if
// not empty; else DOCKER_HOST (with DOCKER_TLS_VERIFY / DOCKER_TLS and the
// certificates in DOCKER_CERT_PATH, default ~/.docker); else the docker
// context named by DOCKER_CONTEXT or by currentContext in the docker
// configuration ($DOCKER_CONFIG, default ~/.docker); else DefaultHost.
// getenv reads the environment.
func ResolveEndpoint(host string, getenv func(string) string) (Endpoint, error) {
	if host != "" {
		return envTLS(Endpoint{Host: host, From: "the given host"}, getenv)
	}
	if h := getenv("DOCKER_HOST"); h != "" {
		return envTLS(Endpoint{Host: h, From: "DOCKER_HOST"}, getenv)
	}
	cfgDir := getenv("DOCKER_CONFIG")
	if cfgDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Endpoint{Host: DefaultHost, From: "the default"}, nil
		}
		cfgDir = filepath.Join(home, ".docker")
	}
	name, from := getenv("DOCKER_CONTEXT"), "DOCKER_CONTEXT"
	if name == "" {
		b, err := os.ReadFile(filepath.Join(cfgDir, "config.json"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return Endpoint{}, fmt.Errorf("read the docker configuration: %w", err)
		default:
			var cfg struct {
				CurrentContext string `json:"currentContext"`
			}
			if err := json.Unmarshal(b, &cfg); err != nil {
				return Endpoint{}, fmt.Errorf("read the docker configuration %s: %w", filepath.Join(cfgDir, "config.json"), err)
			}
			name, from = cfg.CurrentContext, "currentContext in "+filepath.Join(cfgDir, "config.json")
		}
	}
	if name == "" || name == "default" {
		return Endpoint{Host: DefaultHost, From: "the default"}, nil
	}
	return contextEndpoint(cfgDir, name, from)
}

// contextEndpoint reads docker context name from cfgDir/contexts.
func contextEndpoint(cfgDir, name, from string) (Endpoint, error) {
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	metaPath := filepath.Join(cfgDir, "contexts", "meta", id, "meta.json")
	b, err := os.ReadFile(metaPath)
	if err != nil {
		return Endpoint{}, fmt.Errorf("docker context %q (from %s): %w (list them with `docker context ls`)", name, from, err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host          string `json:"Host"`
			SkipTLSVerify bool   `json:"SkipTLSVerify"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return Endpoint{}, fmt.Errorf("docker context %q: read %s: %w", name, metaPath, err)
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return Endpoint{}, fmt.Errorf("docker context %q: %s names no docker endpoint host", name, metaPath)
	}
	e := Endpoint{Host: ep.Host, From: fmt.Sprintf("docker context %q", name)}
	tlsDir := filepath.Join(cfgDir, "contexts", "tls", id, "docker")
	if _, err := os.Stat(tlsDir); err == nil || ep.SkipTLSVerify {
		cfg, err := tlsConfig(tlsDir, !ep.SkipTLSVerify)
		if err != nil {
			return Endpoint{}, fmt.Errorf("docker context %q: %w", name, err)
		}
		e.TLS = cfg
	}
	return e, nil
}

// envTLS adds the TLS settings of DOCKER_TLS_VERIFY / DOCKER_TLS to e.
func envTLS(e Endpoint, getenv func(string) string) (Endpoint, error) {
	verify := getenv("DOCKER_TLS_VERIFY") != ""
	if !verify && getenv("DOCKER_TLS") == "" {
		return e, nil
	}
	dir := getenv("DOCKER_CERT_PATH")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Endpoint{}, fmt.Errorf("DOCKER_CERT_PATH is not set and the home directory is unknown: %w", err)
		}
		dir = filepath.Join(home, ".docker")
	}
	cfg, err := tlsConfig(dir, verify)
	if err != nil {
		return Endpoint{}, fmt.Errorf("DOCKER_CERT_PATH=%s: %w", dir, err)
	}
	e.TLS = cfg
	return e, nil
}

// tlsConfig loads ca.pem, cert.pem and key.pem from dir (each optional
// unless verify needs ca.pem).
func tlsConfig(dir string, verify bool) (*tls.Config, error) {
	// DOCKER_TLS without DOCKER_TLS_VERIFY: TLS without verifying the
	// engine, as docker does.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: !verify}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	switch {
	case err == nil:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(dir, "ca.pem"))
		}
		cfg.RootCAs = pool
	case verify:
		return nil, fmt.Errorf("TLS verification needs the CA certificate: %w", err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if _, err := os.Stat(certFile); err == nil {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("load the client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// dialAddress returns the network and address to dial for host.
func dialAddress(host string) (network, addr string, err error) {
	switch {
	case strings.HasPrefix(host, "unix://"):
		if p := strings.TrimPrefix(host, "unix://"); p != "" {
			return "unix", p, nil
		}
	case strings.HasPrefix(host, "tcp://"):
		a := strings.TrimSuffix(strings.TrimPrefix(host, "tcp://"), "/")
		if _, _, err := net.SplitHostPort(a); err == nil {
			return "tcp", a, nil
		}
	}
	return "", "", fmt.Errorf("docker host %q is not supported: use unix:///path/to/docker.sock or tcp://HOST:PORT", host)
}
