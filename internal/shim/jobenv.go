package shim

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tether-ci/tether/protocol"
)

// maxEnvFile bounds a job's variables file (env_file): a Secret holds at
// most 1 MiB, and so do the variables of a job that comes over the stream.
const maxEnvFile = 1 << 20

// readEnvFile reads a job's variables file (env_file): NAME=VALUE
// entries, each ended by NUL. Its errors never quote the content (it
// holds the job's secrets).
func (fs *fileSink) readEnvFile(path string) ([]string, error) {
	clean, err := fs.inside(path)
	if err != nil {
		return nil, fmt.Errorf("the job's variables file: %w", err)
	}
	st, err := os.Stat(clean)
	if err != nil {
		return nil, fmt.Errorf("the job's variables file: %w (deliver it with file commands before the job)", err)
	}
	if st.Size() > maxEnvFile {
		return nil, fmt.Errorf("the job's variables file %s is %d bytes, more than %d", clean, st.Size(), maxEnvFile)
	}
	data, err := os.ReadFile(clean)
	if err != nil {
		return nil, fmt.Errorf("the job's variables file: %w", err)
	}
	env, err := protocol.ParseEnvFile(data)
	if err != nil {
		return nil, fmt.Errorf("the job's %w", err)
	}
	return env, nil
}

// withEnv returns base with extra's entries, an entry of extra replacing
// one of the same name in base.
func withEnv(base, extra []string) []string {
	if len(extra) == 0 {
		return base
	}
	names := make(map[string]bool, len(extra))
	for _, kv := range extra {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// jobLimits applies a newly received job's deadline_ms and ttl_ms: the
// job, not the shim's start, decides when a pod started before its job
// ends.
func (e *engine) jobLimits(c protocol.Command, now time.Time) {
	if c.DeadlineMS > 0 && !e.expired {
		e.deadline = now.Add(time.Duration(c.DeadlineMS) * time.Millisecond)
		e.log.Info("the job set the deadline", "deadline", e.deadline.UTC().Format(time.RFC3339))
	}
	if c.TTLMS > 0 {
		e.ttlAt, e.ttlFromJob = now.Add(time.Duration(c.TTLMS)*time.Millisecond), true
		e.log.Info("the job set the time to live", "until", e.ttlAt.UTC().Format(time.RFC3339))
	}
}
