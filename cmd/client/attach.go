package main

import (
	"context"
	"fmt"
	"io"
)

// attachCmd is `tether attach`. Placeholder: its owner replaces this file.
func attachCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tether attach: not built yet")
	return exitTether
}
