//go:build !linux

package client

import "io"

// vectorWriterFor returns nil: outputs are written one buffer at a time.
func vectorWriterFor(io.Writer) vectorWriter { return nil }
