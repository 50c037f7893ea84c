package pool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/tether-ci/tether/settings"
)

// PoolsKey is the pools file's one top-level key: the list of pools.
const PoolsKey = "pools"

// Load reads and validates the pools file at path (see Parse).
func Load(path string) ([]Pool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the pools file: %w", err)
	}
	return Parse(path, data)
}

// Parse reads the pools file data (named path in errors): a map whose one
// key, "pools", lists the pools, each a map of pool keys (NewFlagSet) to
// values, as a config file of flag values holds them. Every pool is
// validated (Pool.Validate) and the names must differ. The first error is
// returned, naming the file, the pool and the key.
func Parse(path string, data []byte) ([]Pool, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not valid YAML: %w", path, err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, fmt.Errorf("%s: want a map with the key %q, a list of pools", path, PoolsKey)
	}
	for key := range doc {
		if key != PoolsKey {
			return nil, fmt.Errorf("%s: unknown key %q: the file holds one key, %q, a list of pools (each a map of `tether pool --help`'s keys)", path, key, PoolsKey)
		}
	}
	items, ok := doc[PoolsKey].([]any)
	if !ok || len(items) == 0 {
		return nil, fmt.Errorf("%s: key %q: want a list of at least one pool", path, PoolsKey)
	}
	pools := make([]Pool, 0, len(items))
	seen := map[string]int{}
	for i, item := range items {
		where := fmt.Sprintf("%s: pool %d", path, i+1)
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: want a map of keys to values (name, image, size, …)", where)
		}
		if name, ok := m["name"].(string); ok && name != "" {
			where = fmt.Sprintf("%s: pool %q", path, name)
		}
		var p Pool
		fs := NewFlagSet(&p)
		if err := settings.ApplyValues(fs, where, m); err != nil {
			return nil, err
		}
		if err := p.checkKeys(fs); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if first, dup := seen[p.Name]; dup {
			return nil, fmt.Errorf("%s: the name is taken by pool %d: pool names must differ", where, first)
		}
		seen[p.Name] = i + 1
		pools = append(pools, p)
	}
	return pools, nil
}

// ErrNoPool is wrapped by Find when no pool has the name.
var ErrNoPool = errors.New("no such pool")

// Find returns the pool of pools named name.
func Find(pools []Pool, name string) (*Pool, error) {
	for i := range pools {
		if pools[i].Name == name {
			return &pools[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNoPool, name)
}
