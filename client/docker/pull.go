package docker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tether-ci/tether/internal/dockerengine"
)

// ensureImage pulls ref when the engine does not have it, as `docker run`
// does, logging the pull's progress to log (one line per layer and step).
func (c *Client) ensureImage(ctx context.Context, ref string, log *slog.Logger) error {
	_, err := c.e.ImageID(ctx, ref)
	if err == nil || !dockerengine.IsNotFound(err) {
		return err
	}
	log.Info("pulling image", "image", ref)
	last := map[string]string{} // layer → last status logged
	err = c.e.PullImage(ctx, ref, func(p dockerengine.PullProgress) {
		if p.Status == "" || last[p.ID] == p.Status {
			return // progress bar ticks: one line per step is enough
		}
		last[p.ID] = p.Status
		log.Info("pull progress", "image", ref, "layer", p.ID, "status", p.Status)
	})
	if err != nil {
		return fmt.Errorf("image %s is not in the engine's image store and pulling it failed "+
			"(for Tether's own images: make images, then docker load -i / podman load -i bin/images/NAME.tar): %w", ref, err)
	}
	log.Info("image pulled", "image", ref)
	return nil
}
