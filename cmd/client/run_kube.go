package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tether-ci/tether/client"
)

// runKube runs job in a Kubernetes pod. Placeholder: the Kubernetes
// backend's owner replaces this file.
func runKube(ctx context.Context, f *runFlags, job client.Job, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tether run: the Kubernetes backend is not built yet; use --local")
	return exitTether
}
