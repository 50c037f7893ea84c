package local

import (
	"errors"
	"fmt"
	"os/exec"

	"github.com/tether-ci/tether/internal/sibling"
)

// ShimName is the shim binary's file name.
const ShimName = "tether-shim"

// FindShim returns the path of the tether-shim binary to run: explicit if
// it is not empty (the --shim flag), else tether-shim next to the running
// executable, else tether-shim on PATH.
func FindShim(explicit string) (string, error) {
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return "", fmt.Errorf("shim %q cannot be run: %w (pass the path of a built tether-shim; `make build` writes bin/tether-shim)", explicit, err)
		}
		return p, nil
	}
	p, err := sibling.Find(ShimName)
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("find %s on PATH: %w", ShimName, err)
	}
	return "", fmt.Errorf("%s not found next to this program nor on PATH: run `make build` (it writes bin/tether and bin/tether-shim side by side) or pass --shim PATH", ShimName)
}
