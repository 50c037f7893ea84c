package actions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
)

// deliverFiles writes files and makes links in the job container through
// its shim and returns the shim's stream offset after it (where the next
// job's output starts).
func deliverFiles(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod, files []transfer.File, links []transfer.Link) (int64, error) {
	from, err := client.StreamEnd(ctx, c.transport(h, pod), 0, client.Options{Logger: h.logger()})
	if err != nil {
		return 0, fmt.Errorf("cannot reach the job container: %w", err)
	}
	job := transfer.DeliveryJob(client.NewJobID("deliver"), files, links)
	res, out, err := c.runHelper(ctx, h, pod, job, client.Options{From: from, ReconnectTimeout: h.Settings.ReconnectTimeout})
	if err != nil {
		return 0, err
	}
	if res.ExitCode != 0 {
		return 0, fmt.Errorf("the copy in the job container failed with exit code %d: %s", res.ExitCode, firstLine(out))
	}
	return res.Offset, nil
}

// readOptional reads a file; one that does not exist is nil, no error.
func readOptional(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
