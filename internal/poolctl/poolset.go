package poolctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/internal/pool"
)

// poolConfig is one pool as the controller keeps it: its settings, the
// spec of its pods and that spec's hash.
type poolConfig struct {
	pool.Pool
	spec kube.Spec
	hash string
}

// poolSet is the pools in force, replaced whole when the file changes.
type poolSet struct {
	mu        sync.Mutex
	namespace string
	pools     map[string]*poolConfig
	listeners []func(names []string)
}

func newPoolSet(ns string, pools []pool.Pool) (*poolSet, error) {
	s := &poolSet{namespace: ns}
	m, err := configs(ns, pools)
	if err != nil {
		return nil, err
	}
	s.pools = m
	return s, nil
}

// configs makes the pools' specs and hashes.
func configs(ns string, pools []pool.Pool) (map[string]*poolConfig, error) {
	m := map[string]*poolConfig{}
	for _, p := range pools {
		spec, err := p.Spec(ns)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", p.Name, err)
		}
		hash, err := kube.PoolHash(spec)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", p.Name, err)
		}
		m[p.Name] = &poolConfig{Pool: p, spec: spec, hash: hash}
	}
	return m, nil
}

// get returns the pool named name, or nil.
func (s *poolSet) get(name string) *poolConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pools[name]
}

// names returns the pools' names, sorted.
func (s *poolSet) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.pools {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// replace puts pools in force and tells the listeners the names of the
// pools that changed, came or went.
func (s *poolSet) replace(pools map[string]*poolConfig) {
	s.mu.Lock()
	var changed []string
	for n, p := range pools {
		if old := s.pools[n]; old == nil || old.hash != p.hash || old.Size != p.Size || old.MaxIdle != p.MaxIdle {
			changed = append(changed, n)
		}
	}
	for n := range s.pools {
		if pools[n] == nil {
			changed = append(changed, n)
		}
	}
	s.pools = pools
	ls := slices.Clone(s.listeners)
	s.mu.Unlock()
	for _, l := range ls {
		l(changed)
	}
}

// onChange adds a listener; the function returned removes it.
func (s *poolSet) onChange(f func(names []string)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, f)
	i := len(s.listeners) - 1
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.listeners[i] = func([]string) {}
	}
}

// reloadLoop reads the pools file every ReloadInterval and puts a new,
// valid content in force.
func (c *Controller) reloadLoop(ctx context.Context) {
	last, _ := os.ReadFile(c.opts.ConfigPath)
	t := time.NewTicker(c.opts.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(c.opts.ConfigPath)
		if err != nil {
			c.opts.Log.Error("cannot read the pools file; keeping the pools", "file", c.opts.ConfigPath, "err", err)
			continue
		}
		if bytes.Equal(data, last) {
			continue
		}
		last = data
		pools, err := pool.Parse(c.opts.ConfigPath, data)
		var m map[string]*poolConfig
		if err == nil {
			m, err = configs(c.opts.Namespace, pools)
		}
		if err != nil {
			c.opts.Log.Error("the pools file changed but is not valid; keeping the pools", "file", c.opts.ConfigPath, "err", err)
			continue
		}
		c.opts.Log.Info("the pools file changed", "file", c.opts.ConfigPath, "pools", len(pools))
		c.pools.replace(m)
	}
}

// everything selects every pod of the informer's cache.
func everything() labels.Selector { return labels.Everything() }
