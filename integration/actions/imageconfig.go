package actions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
)

// imageCommand is an image's ENTRYPOINT and CMD, as its config in the
// registry has them.
type imageCommand struct {
	Entrypoint, Cmd []string
}

// readImageCommand reads image's ENTRYPOINT and CMD from its registry
// (the linux image of the hook's own architecture where the image is an
// index), with the credentials of dockerConfig (a .dockerconfigjson, nil
// for none) for the image's registry. A registry on localhost, a loopback
// or a private (RFC 1918) address is spoken to over plain HTTP, as the
// container runtime does for localhost.
func readImageCommand(ctx context.Context, image string, dockerConfig []byte) (imageCommand, error) {
	ref, err := parseImageRef(image)
	if err != nil {
		return imageCommand{}, fmt.Errorf("the image name %q: %w", image, err)
	}
	keys, err := parseAuths(dockerConfig)
	if err != nil {
		return imageCommand{}, err
	}
	c := &registryClient{http: &http.Client{}, ref: ref, cred: keys.lookup(ref.registry)}
	cfg, err := c.imageConfig(ctx, "linux", runtime.GOARCH)
	if err != nil {
		return imageCommand{}, fmt.Errorf("read the image %s from its registry %s: %w", image, ref.registry, err)
	}
	return imageCommand{Entrypoint: cfg.Config.Entrypoint, Cmd: cfg.Config.Cmd}, nil
}

// stepArgv is what a container step runs, with Docker's rules (the
// runner's docker run): an entry point replaces the image's ENTRYPOINT and
// drops its CMD; without one the image's ENTRYPOINT runs with the step's
// arguments, or with the image's CMD when the step has none. image is
// read only when the step has no entry point.
func stepArgv(entryPoint string, args []string, image func() (imageCommand, error)) ([]string, error) {
	if entryPoint != "" {
		return append([]string{entryPoint}, args...), nil
	}
	ic, err := image()
	if err != nil {
		return nil, fmt.Errorf("the action names no entrypoint, so its image's ENTRYPOINT and CMD apply, which tether actions reads from the image's registry "+
			"(it runs the step under tether-shim, which must know them); it could not: %w; "+
			"give the action an entrypoint (runs.entrypoint in its action.yml), or let the hook reach the registry", err)
	}
	argv := append([]string{}, ic.Entrypoint...)
	if len(args) > 0 {
		argv = append(argv, args...)
	} else {
		argv = append(argv, ic.Cmd...)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("the action names no entrypoint and its image has neither ENTRYPOINT nor CMD: nothing to run")
	}
	return argv, nil
}

// registryCredential is a user name and password for a registry.
type registryCredential struct{ user, pass string }

// dockerAuths is a .dockerconfigjson's credentials by registry host.
type dockerAuths map[string]registryCredential

// parseAuths reads the credentials of a .dockerconfigjson (nil: none).
func parseAuths(config []byte) (dockerAuths, error) {
	keys := dockerAuths{}
	if len(config) == 0 {
		return keys, nil
	}
	var doc struct {
		Auths map[string]struct {
			Username, Password, Auth string
		} `json:"auths"`
	}
	if err := json.Unmarshal(config, &doc); err != nil {
		return nil, fmt.Errorf("the job pod's registry credentials are not a .dockerconfigjson: %w", err)
	}
	for server, a := range doc.Auths {
		user, pass := a.Username, a.Password
		if user == "" && pass == "" && a.Auth != "" {
			b, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("the registry credentials of %s: auth is not base64: %w", server, err)
			}
			user, pass, _ = strings.Cut(string(b), ":")
		}
		keys[registryHost(server)] = registryCredential{user: user, pass: pass}
	}
	return keys, nil
}

// lookup returns the credentials of registry, nil for anonymous access.
func (d dockerAuths) lookup(registry string) *registryCredential {
	if c, ok := d[registryHost(registry)]; ok && (c.user != "" || c.pass != "") {
		return &c
	}
	return nil
}

// registryHost is the host (and port) of a registry as a .dockerconfigjson
// key or an image reference names it; Docker Hub's names are one.
func registryHost(server string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	s, _, _ = strings.Cut(s, "/")
	switch s = strings.ToLower(s); s {
	case "docker.io", "registry-1.docker.io", "index.docker.io":
		return dockerHubRegistry
	}
	return s
}
