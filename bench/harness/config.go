package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// config is one harness run's settings.
type config struct {
	repo     string // repository root
	shim     string // bin/tether-shim
	tether   string // bin/tether
	self     string // this executable (the read-logs emulation)
	shell    string // shell for scripts and baselines
	bytes    int64  // relay bytes per throughput run
	bigBytes int64  // relay bytes of the memory run
	repeat   int    // runs per measurement
	latency  int    // latency samples per path
	scripts  int    // scripts per overhead run
	// overheadRounds is how many times the overhead section runs each
	// variant (interleaved): its CPU figures are medians of rounds.
	overheadRounds int
	nodeJobs       int   // concurrent jobs on the real node
	nodeBytes      int64 // output of the bulk job on the real node
	only           map[string]bool
	// relayPaths limits the relay section's paths (the cat baseline
	// always runs); empty means all.
	relayPaths map[string]bool
	out        string // results file, "" for none
	gobench    string // go test -bench output to include, or ""
	e2eDir     string // e2e node state
	cpuProfile string // write this process's CPU profile here, or ""
}

// sectionNames returns the sections the harness knows, in run order.
func sectionNames() []string {
	return []string{"cli", "relay", "latency", "overhead", "memory", "node", "gitlab", "pool", "jobpath", "actions", "actions-prepare"}
}

func (c *config) enabled(section string) bool { return len(c.only) == 0 || c.only[section] }

func loadConfig(args []string, getenv func(string) string) (*config, error) {
	fs := flag.NewFlagSet("harness", flag.ContinueOnError)
	repo := fs.String("repo", ".", "repository root (bin/tether-shim and bin/tether are below it)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(*repo)
	if err != nil {
		return nil, fmt.Errorf("repository root %s: %w", *repo, err)
	}
	c := &config{
		repo:   root,
		shim:   filepath.Join(root, "bin", "tether-shim"),
		tether: filepath.Join(root, "bin", "tether"),
	}
	for _, p := range []string{c.shim, c.tether} {
		if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("%s is missing or not executable: run `make build` first (or `make bench`, which does)", p)
		}
	}
	if c.self, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("find the harness executable (it runs itself as the read-logs emulation): %w", err)
	}
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var errs []error
	size := func(name, def string) int64 {
		n, err := parseSize(env(name, def))
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive byte count such as 1073741824, 512MiB or 10GiB", name, env(name, def)))
		}
		return n
	}
	count := func(name, def string) int {
		n, err := strconv.Atoi(env(name, def))
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", name, env(name, def)))
		}
		return n
	}
	c.bytes = size("BENCH_BYTES", "1GiB")
	c.bigBytes = size("BENCH_BIG_BYTES", "10GiB")
	c.repeat = count("BENCH_REPEAT", "3")
	c.latency = count("BENCH_LAT_SAMPLES", "200")
	c.scripts = count("BENCH_SCRIPTS", "1000")
	c.overheadRounds = count("BENCH_OVERHEAD_ROUNDS", "7")
	c.nodeJobs = count("BENCH_NODE_JOBS", "100")
	c.nodeBytes = size("BENCH_NODE_BYTES", "100000000")
	c.shell = env("BENCH_SHELL", "/bin/sh")
	if _, err := os.Stat(c.shell); err != nil {
		errs = append(errs, fmt.Errorf("BENCH_SHELL %s: %w", c.shell, err))
	}
	if only := env("BENCH_ONLY", ""); only != "" {
		c.only = map[string]bool{}
		for _, s := range strings.Split(only, ",") {
			s = strings.TrimSpace(s)
			if !contains(sectionNames(), s) {
				errs = append(errs, fmt.Errorf("BENCH_ONLY: unknown section %q (known: %s)", s, strings.Join(sectionNames(), ",")))
			}
			c.only[s] = true
		}
	}
	if v := env("BENCH_RELAY_PATHS", ""); v != "" {
		c.relayPaths = map[string]bool{}
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if !contains([]string{"cat", "tether", "tether-memory", "gitlab"}, s) {
				errs = append(errs, fmt.Errorf("BENCH_RELAY_PATHS: unknown path %q (known: cat,tether,tether-memory,gitlab)", s))
			}
			c.relayPaths[s] = true
		}
	}
	c.out = env("BENCH_OUT", filepath.Join(root, "bench", "results.md"))
	if c.out == "-" {
		c.out = ""
	}
	c.gobench = getenv("BENCH_GOBENCH")
	if p := getenv("BENCH_SHIM"); p != "" {
		c.shim = p // e.g. bench/shimprof, to profile the shim
	}
	c.cpuProfile = getenv("BENCH_CPUPROFILE")
	c.e2eDir = env("TETHER_E2E_DIR", "/var/tmp/tether-e2e")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// parseSize parses a byte count: a plain integer or one with a KiB, MiB or
// GiB suffix.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse size %q: %w", s, err)
	}
	return n * mult, nil
}
