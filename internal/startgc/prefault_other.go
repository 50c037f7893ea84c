//go:build !linux

package startgc

import "errors"

// prefaultHeap does nothing where Linux's MADV_POPULATE_WRITE does not
// exist.
func prefaultHeap() error { return errors.ErrUnsupported }
