package actions

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
)

// dockerHubRegistry is the registry of image names without one (Docker Hub).
const dockerHubRegistry = "index.docker.io"

// imageRef is an image name split as a registry serves it.
type imageRef struct {
	// registry is the host (and port) of the registry.
	registry string
	// repo is the repository, library/NAME for Docker Hub's one-part names.
	repo string
	// reference is the digest (sha256:…) when the name has one, else the tag.
	reference string
}

var (
	repoPattern   = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	tagPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// parseImageRef splits image with Docker's rules: the first part of the
// name is the registry when it has a dot or a colon or is localhost, else
// the registry is Docker Hub (and a one-part name is in its library); the
// tag defaults to latest; a digest wins over a tag.
func parseImageRef(image string) (imageRef, error) {
	rest, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest && !digestPattern.MatchString(digest) {
		return imageRef{}, fmt.Errorf("the digest %q is not sha256: and 64 hex digits", digest)
	}
	tag := ""
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		rest, tag = rest[:i], rest[i+1:]
		if !tagPattern.MatchString(tag) {
			return imageRef{}, fmt.Errorf("the tag %q has characters a tag cannot have", tag)
		}
	}
	ref := imageRef{registry: dockerHubRegistry, repo: rest}
	if first, after, ok := strings.Cut(rest, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		ref.registry, ref.repo = first, after
	}
	if ref.registry == "docker.io" || ref.registry == "registry-1.docker.io" {
		ref.registry = dockerHubRegistry
	}
	if ref.registry == dockerHubRegistry && !strings.Contains(ref.repo, "/") {
		ref.repo = "library/" + ref.repo
	}
	if !repoPattern.MatchString(ref.repo) {
		return imageRef{}, errors.New("the repository must be lower-case letters, digits and separators (. _ - /)")
	}
	switch {
	case hasDigest:
		ref.reference = digest
	case tag != "":
		ref.reference = tag
	default:
		ref.reference = "latest"
	}
	return ref, nil
}

// scheme is how the registry is spoken to: plain HTTP on localhost, a
// loopback or a private IPv4 address, else HTTPS.
func (r imageRef) scheme() string {
	host := r.registry
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return "http"
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && (ip.IsLoopback() || ip.To4() != nil && ip.IsPrivate()) {
		return "http"
	}
	return "https"
}
