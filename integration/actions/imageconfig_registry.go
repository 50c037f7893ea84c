package actions

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// The media types of the manifests an image's config is reached through.
const (
	mediaOCIIndex       = "application/vnd.oci.image.index.v1+json"
	mediaDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	mediaDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
)

// Bounds on what a registry answers: a manifest and an image config are
// small JSON documents.
const (
	maxManifestBytes = 4 << 20
	maxConfigBytes   = 8 << 20
)

// imageConfigFile is the part of an image's config Tether reads.
type imageConfigFile struct {
	Config struct {
		Entrypoint []string `json:"Entrypoint"`
		Cmd        []string `json:"Cmd"`
	} `json:"config"`
}

// registryClient reads one repository of an OCI distribution registry:
// anonymously, with basic authentication or with a bearer token from the
// registry's token service (Docker's token authentication), as the
// registry's challenge asks.
type registryClient struct {
	http *http.Client
	ref  imageRef
	cred *registryCredential // nil: anonymous
	// authorization is the Authorization header once a challenge set it.
	authorization string
}

// imageConfig returns the config of the image: its manifest, or the
// manifest for os/arch of its index, then the config blob (each checked
// against its digest).
func (c *registryClient) imageConfig(ctx context.Context, os, arch string) (*imageConfigFile, error) {
	body, media, err := c.manifest(ctx, c.ref.reference)
	if err != nil {
		return nil, err
	}
	if media == mediaOCIIndex || media == mediaDockerList {
		var index struct {
			Manifests []struct {
				Digest   string `json:"digest"`
				Platform *struct {
					OS           string `json:"os"`
					Architecture string `json:"architecture"`
				} `json:"platform"`
			} `json:"manifests"`
		}
		if err := json.Unmarshal(body, &index); err != nil {
			return nil, fmt.Errorf("the image index is not JSON: %w", err)
		}
		digest := ""
		for _, m := range index.Manifests {
			if m.Platform != nil && m.Platform.OS == os && m.Platform.Architecture == arch {
				digest = m.Digest
				break
			}
		}
		if digest == "" {
			return nil, fmt.Errorf("the image index has no image for %s/%s", os, arch)
		}
		if body, media, err = c.manifest(ctx, digest); err != nil {
			return nil, err
		}
	}
	if media != mediaOCIManifest && media != mediaDockerManifest {
		return nil, fmt.Errorf("the manifest's media type %q is none of an image's (OCI or Docker v2)", media)
	}
	var manifest struct {
		Config struct {
			Digest string `json:"digest"`
		} `json:"config"`
	}
	if err := json.Unmarshal(body, &manifest); err != nil {
		return nil, fmt.Errorf("the image manifest is not JSON: %w", err)
	}
	if !validDigest(manifest.Config.Digest) {
		return nil, fmt.Errorf("the image manifest's config digest %q is not a sha256 digest", manifest.Config.Digest)
	}
	resp, err := c.get(ctx, "blobs/"+manifest.Config.Digest, nil)
	if err != nil {
		return nil, fmt.Errorf("the image's config: %w", err)
	}
	blob, err := readVerified(resp, maxConfigBytes, manifest.Config.Digest)
	if err != nil {
		return nil, fmt.Errorf("the image's config: %w", err)
	}
	cfg := &imageConfigFile{}
	if err := json.Unmarshal(blob, cfg); err != nil {
		return nil, fmt.Errorf("the image's config is not JSON: %w", err)
	}
	return cfg, nil
}

// manifest returns the manifest or index reference (a tag or a digest)
// names, and its media type.
func (c *registryClient) manifest(ctx context.Context, reference string) ([]byte, string, error) {
	resp, err := c.get(ctx, "manifests/"+reference, []string{mediaOCIIndex, mediaDockerList, mediaOCIManifest, mediaDockerManifest})
	if err != nil {
		return nil, "", fmt.Errorf("the manifest %s: %w", reference, err)
	}
	want := ""
	if strings.HasPrefix(reference, "sha256:") {
		want = reference
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	body, err := readVerified(resp, maxManifestBytes, want)
	if err != nil {
		return nil, "", fmt.Errorf("the manifest %s: %w", reference, err)
	}
	if media == "" || media == "application/json" || media == "text/plain" {
		var doc struct {
			MediaType string `json:"mediaType"`
		}
		_ = json.Unmarshal(body, &doc) // a manifest that is no JSON fails as its type's
		media = doc.MediaType
	}
	return body, media, nil
}

// readVerified reads resp's body (closing it), at most limit bytes, and
// checks it against digest unless that is "".
func readVerified(resp *http.Response, limit int64, digest string) ([]byte, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read the registry's answer: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("the registry's answer is larger than %d bytes", limit)
	}
	if digest != "" {
		sum := sha256.Sum256(body)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
			return nil, fmt.Errorf("the registry's answer has the digest %s, not %s", got, digest)
		}
	}
	return body, nil
}

// get sends a GET of the repository's path (manifests/… or blobs/…),
// answering the registry's authentication challenge once, and returns
// the 200 response.
func (c *registryClient) get(ctx context.Context, path string, accept []string) (*http.Response, error) {
	u := c.ref.scheme() + "://" + c.ref.registry + "/v2/" + c.ref.repo + "/" + path
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		for _, a := range accept {
			req.Header.Add("Accept", a)
		}
		if c.authorization != "" {
			req.Header.Set("Authorization", c.authorization)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		if resp.StatusCode == http.StatusUnauthorized && attempt == 0 {
			challenge := resp.Header.Get("WWW-Authenticate")
			resp.Body.Close()
			if c.authorization, err = c.authorize(ctx, challenge); err != nil {
				return nil, err
			}
			continue
		}
		defer resp.Body.Close()
		return nil, registryError(resp)
	}
}

// registryError describes a registry's refusal: its status and the
// messages of its error document.
func registryError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var doc struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	var msgs []string
	if json.Unmarshal(body, &doc) == nil {
		for _, e := range doc.Errors {
			msgs = append(msgs, strings.TrimSpace(e.Code+": "+e.Message))
		}
	}
	if len(msgs) == 0 {
		return fmt.Errorf("the registry answered %s", resp.Status)
	}
	return fmt.Errorf("the registry answered %s: %s", resp.Status, strings.Join(msgs, "; "))
}

// authorize returns the Authorization header that answers challenge (a
// WWW-Authenticate header): the credentials for Basic, a token of the
// registry's token service for Bearer.
func (c *registryClient) authorize(ctx context.Context, challenge string) (string, error) {
	scheme, params := parseChallenge(challenge)
	switch strings.ToLower(scheme) {
	case "basic":
		if c.cred == nil {
			return "", fmt.Errorf("the registry asks for credentials and the job pod's pull secrets have none for %s", c.ref.registry)
		}
		return "Basic " + basicAuth(c.cred), nil
	case "bearer":
		token, err := c.token(ctx, params)
		if err != nil {
			return "", fmt.Errorf("get a token from the registry's token service: %w", err)
		}
		return "Bearer " + token, nil
	}
	return "", fmt.Errorf("the registry answered 401 Unauthorized with the challenge %q, neither Basic nor Bearer", challenge)
}

// token asks the token service of a Bearer challenge's params for a pull
// token of the repository, with the credentials if there are any.
func (c *registryClient) token(ctx context.Context, params map[string]string) (string, error) {
	realm, err := url.Parse(params["realm"])
	if err != nil || realm.Host == "" || realm.Scheme != "https" && realm.Scheme != "http" {
		return "", fmt.Errorf("the challenge's realm %q is no URL", params["realm"])
	}
	q := realm.Query()
	if s := params["service"]; s != "" {
		q.Set("service", s)
	}
	scope := params["scope"]
	if scope == "" {
		scope = "repository:" + c.ref.repo + ":pull"
	}
	q.Set("scope", scope)
	realm.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, realm.String(), nil)
	if err != nil {
		return "", err
	}
	if c.cred != nil {
		req.Header.Set("Authorization", "Basic "+basicAuth(c.cred))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", registryError(resp)
	}
	var doc struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return "", fmt.Errorf("the token service's answer is not JSON: %w", err)
	}
	if doc.Token != "" {
		return doc.Token, nil
	}
	if doc.AccessToken != "" {
		return doc.AccessToken, nil
	}
	return "", errors.New("the token service's answer has no token")
}

// basicAuth is the credentials as HTTP basic authentication has them.
func basicAuth(c *registryCredential) string {
	return base64.StdEncoding.EncodeToString([]byte(c.user + ":" + c.pass))
}

// parseChallenge splits a WWW-Authenticate header into its scheme and
// its parameters (key=value or key="value", comma separated).
func parseChallenge(h string) (string, map[string]string) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		key = strings.ToLower(strings.TrimSpace(key))
		var val string
		if strings.HasPrefix(after, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(after) && after[i] != '"'; i++ {
				if after[i] == '\\' && i+1 < len(after) {
					i++
				}
				b.WriteByte(after[i])
			}
			val, rest = b.String(), after[min(i+1, len(after)):]
		} else {
			val, rest, _ = strings.Cut(after, ",")
			val = strings.TrimSpace(val)
			rest = "," + rest
		}
		params[key] = val
		rest = strings.TrimSpace(rest)
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	return scheme, params
}
