package actions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// imageCommand is an image's ENTRYPOINT and CMD, as its config in the
// registry has them.
type imageCommand struct {
	Entrypoint, Cmd []string
}

// readImageCommand reads image's ENTRYPOINT and CMD from its registry
// (the linux image of the hook's own architecture where the image is an
// index), with the credentials of dockerConfig (a .dockerconfigjson, nil
// for none) for the image's registry. A registry on localhost or 127.0.0.1
// is spoken to over plain HTTP, as the container runtime does.
func readImageCommand(ctx context.Context, image string, dockerConfig []byte) (imageCommand, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return imageCommand{}, fmt.Errorf("the image name %q: %w", image, err)
	}
	keys, err := parseAuths(dockerConfig)
	if err != nil {
		return imageCommand{}, err
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(keys),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		return imageCommand{}, fmt.Errorf("read the image %s from its registry %s: %w", image, ref.Context().RegistryStr(), err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return imageCommand{}, fmt.Errorf("read the config of the image %s: %w", image, err)
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

// dockerAuths is a .dockerconfigjson's credentials by registry host, as an
// authn.Keychain.
type dockerAuths map[string]authn.AuthConfig

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
		keys[registryHost(server)] = authn.AuthConfig{Username: user, Password: pass}
	}
	return keys, nil
}

// Resolve returns the credentials of the resource's registry, else
// anonymous access.
func (d dockerAuths) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if a, ok := d[registryHost(r.RegistryStr())]; ok {
		return authn.FromConfig(a), nil
	}
	return authn.Anonymous, nil
}

// registryHost is the host (and port) of a registry as a .dockerconfigjson
// key or an image reference names it; Docker Hub's names are one.
func registryHost(server string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	s, _, _ = strings.Cut(s, "/")
	switch s = strings.ToLower(s); s {
	case "docker.io", "registry-1.docker.io", "index.docker.io":
		return name.DefaultRegistry
	}
	return s
}
