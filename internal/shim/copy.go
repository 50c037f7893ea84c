package shim

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// copySelf copies the running binary to dest (mode 0755), creating its
// directory. An init container runs it to put the shim into a shared
// emptyDir, so the helper image needs no shell or cp.
func copySelf(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	in, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("open own binary: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dest), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".tether-shim-*")
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dest, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("copy to %s: %w", dest, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", dest, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("copy to %s: %w", dest, err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("install %s: %w", dest, err)
	}
	return nil
}
