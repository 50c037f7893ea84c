package dockerengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// PullProgress is one progress message of a pull, as the engine reports it.
type PullProgress struct {
	// ID is the layer (or tag) the message is about.
	ID string `json:"id"`
	// Status says what happens ("Pulling fs layer", "Download complete").
	Status string `json:"status"`
	// Progress is the engine's progress bar text, if any.
	Progress string `json:"progress"`
	// Error is set on a failure.
	Error string `json:"error"`
}

// splitRef splits an image reference into the fromImage and tag
// parameters of POST /images/create: a reference without a tag or digest
// means its "latest" tag (the API would pull every tag otherwise).
func splitRef(ref string) (image, tag string) {
	if strings.Contains(ref, "@") {
		return ref, ""
	}
	slash := strings.LastIndexByte(ref, '/')
	if i := strings.LastIndexByte(ref, ':'); i > slash {
		return ref[:i], ref[i+1:]
	}
	return ref, "latest"
}

// PullImage pulls ref into the engine's image store, calling progress (if
// not nil) for each progress message, and returns once the pull finished.
func (c *Client) PullImage(ctx context.Context, ref string, progress func(PullProgress)) error {
	image, tag := splitRef(ref)
	q := url.Values{"fromImage": {image}}
	if tag != "" {
		q.Set("tag", tag)
	}
	resp, err := c.do(ctx, http.MethodPost, "/images/create", q, "", nil)
	if err != nil {
		return fmt.Errorf("pull image %s: %w", ref, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var p PullProgress
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pull image %s: read the engine's progress: %w", ref, err)
		}
		if p.Error != "" {
			return fmt.Errorf("pull image %s: %s", ref, p.Error)
		}
		if progress != nil {
			progress(p)
		}
	}
}
