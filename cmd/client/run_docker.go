package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tether-ci/tether/client"
)

// runDocker runs job in a docker/podman container. Placeholder: the docker
// backend's owner replaces this file.
func runDocker(ctx context.Context, f *runFlags, job client.Job, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tether run --docker: the docker backend is not built yet; use --local")
	return exitTether
}
