package main

import (
	"context"
	"fmt"
	"io"
)

// gcCmd is `tether gc`. Placeholder: its owner replaces this file.
func gcCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tether gc: not built yet")
	return exitTether
}
