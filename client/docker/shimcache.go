package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// shimCacheMaxAge is how long an unused cached shim is kept.
const shimCacheMaxAge = 7 * 24 * time.Hour

// shimFromHelperCached returns the helper image's shim, from cacheDir when a
// copy taken from the same image ID is there, else copied out of the image
// (and stored). Cache trouble only costs the copy.
func (c *Client) shimFromHelperCached(ctx context.Context, image, cacheDir string) ([]byte, error) {
	if cacheDir == "" {
		return c.shimFromHelper(ctx, image)
	}
	id, err := c.e.ImageID(ctx, image)
	if err != nil {
		return nil, fmt.Errorf("copy the shim out of helper image %s: %w", image, err)
	}
	key := strings.NewReplacer(":", "-", "/", "-").Replace(id)
	path := filepath.Join(cacheDir, key, "tether-shim")
	if data, err := os.ReadFile(path); err == nil && len(data) > 0 {
		now := time.Now()
		_ = os.Chtimes(path, now, now) // mark as used for pruning
		return data, nil
	}
	data, err := c.shimFromHelper(ctx, image)
	if err != nil {
		return nil, err
	}
	storeShim(cacheDir, key, data)
	return data, nil
}

// storeShim writes data to cacheDir/key/tether-shim atomically and prunes
// entries unused for shimCacheMaxAge. Errors are ignored: the cache is an
// optimisation.
func storeShim(cacheDir, key string, data []byte) {
	dir := filepath.Join(cacheDir, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".tether-shim-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(dir, "tether-shim")) != nil {
		_ = os.Remove(tmp.Name())
		return
	}
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() == key || !e.IsDir() {
			continue
		}
		st, err := os.Stat(filepath.Join(cacheDir, e.Name(), "tether-shim"))
		if err != nil || time.Since(st.ModTime()) > shimCacheMaxAge {
			_ = os.RemoveAll(filepath.Join(cacheDir, e.Name()))
		}
	}
}
