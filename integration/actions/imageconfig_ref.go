package actions

import (
	"errors"
	"fmt"
	"net"
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

// validRepo reports whether repo is a repository name: parts of
// lower-case letters and digits, separated inside by ".", "_", "__" or
// dashes, joined by "/". (Hand-written: a regular expression would be
// compiled at every start of tether.)
func validRepo(repo string) bool {
	for part := range strings.SplitSeq(repo, "/") {
		if part == "" || !alnum(part[0]) || !alnum(part[len(part)-1]) {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			switch {
			case alnum(c), c == '-':
			case c == '.' || c == '_':
				if n := part[i+1]; !alnum(n) && !(c == '_' && n == '_' && alnum(part[i+2])) {
					return false
				}
				if c == '_' && part[i+1] == '_' {
					i++
				}
			default:
				return false
			}
		}
	}
	return true
}

// validTag reports whether tag is an image tag: a word character, then
// at most 127 word characters, dots and dashes.
func validTag(tag string) bool {
	if tag == "" || len(tag) > 128 || tag[0] == '.' || tag[0] == '-' {
		return false
	}
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; !alnum(c) && c != '_' && c != '.' && c != '-' && !('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// validDigest reports whether d is a sha256 digest.
func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		if c := hexPart[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// alnum reports whether c is a lower-case letter or a digit.
func alnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// parseImageRef splits image with Docker's rules: the first part of the
// name is the registry when it has a dot or a colon or is localhost, else
// the registry is Docker Hub (and a one-part name is in its library); the
// tag defaults to latest; a digest wins over a tag.
func parseImageRef(image string) (imageRef, error) {
	rest, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest && !validDigest(digest) {
		return imageRef{}, fmt.Errorf("the digest %q is not sha256: and 64 hex digits", digest)
	}
	tag := ""
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		rest, tag = rest[:i], rest[i+1:]
		if !validTag(tag) {
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
	if !validRepo(ref.repo) {
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
