package actions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
)

// ToolDir is the runner's tool cache (_work/_tool, RUNNER_TOOL_CACHE) in
// the job container.
const ToolDir = "/__w/_tool"

// Bounds of one job that copies part of the runner's disk: its staged
// files land in the shim's memory-backed files volume (counted against the
// pod's memory) before they are moved into place.
const (
	copyBatchBytes   = 32 << 20
	copyBatchEntries = 4096
)

// runnerDir is a directory of the runner's disk that prepare_job copies
// into the job container.
type runnerDir struct {
	what      string // what it is, for messages: "workspace", ...
	host      string // its runner-host path
	container string // its path in the job container
	entries   []transfer.Entry
	size      int64
	// workspace makes the last job record the workspace's action
	// metadata files (actionMetaFunc): the runner has them already.
	workspace bool
}

// runnerDisk is what prepare_job copies from the runner's disk.
type runnerDisk struct {
	dirs []runnerDir
}

// empty says whether there is nothing to copy: no directory holds an entry.
func (d *runnerDisk) empty() bool {
	for _, r := range d.dirs {
		if len(r.entries) > 0 {
			return false
		}
	}
	return true
}

// mountSource maps the container path p to the runner-host path through
// the job container's system mounts (the runner's <work> → /__w,
// _tool → /__w/_tool, _temp/_github_home → /github/home, ...): the mount
// whose target holds p most closely wins. ok is false when none does.
func mountSource(mounts []hookapi.Mount, p string) (string, bool) {
	best, host := -1, ""
	for _, m := range mounts {
		t := path.Clean(m.TargetVolumePath)
		if m.SourceVolumePath == "" || !path.IsAbs(t) || len(t) <= best {
			continue
		}
		if rel, ok := strings.CutPrefix(p, t); ok && (rel == "" || strings.HasPrefix(rel, "/") || t == "/") {
			best, host = len(t), filepath.Join(m.SourceVolumePath, filepath.FromSlash(rel))
		}
	}
	return host, best >= 0
}

// planRunnerDisk lists what prepare_job copies from the runner's disk into
// the job container, at the container paths the runner's mounts name: the
// workspace (the job container's working directory, under WorkDir), the
// tool cache (ToolDir) and HOME (HomeDir). A directory the mounts do not
// name or that does not exist on the runner is left out. Together the
// files may hold at most limit bytes: beyond it the error names the
// directory and EnvCopyLimit, and nothing is copied.
func planRunnerDisk(ctr *Container, limit int64) (*runnerDisk, error) {
	targets := []struct{ what, container string }{{"tool cache", ToolDir}, {"home directory (_github_home)", HomeDir}}
	if wd := ctr.WorkingDirectory; wd != "" && strings.HasPrefix(wd, WorkDir+"/") {
		targets = append([]struct{ what, container string }{{"workspace", path.Clean(wd)}}, targets...)
	}
	disk := &runnerDisk{}
	var total int64
	for _, t := range targets {
		host, ok := mountSource(ctr.SystemMountVolumes, t.container)
		if !ok {
			continue
		}
		// The directory itself may be a link (a tool cache elsewhere).
		if real, err := filepath.EvalSymlinks(host); err == nil {
			host = real
		}
		entries, size, err := transfer.Walk(host, limit-total, true)
		switch {
		case errors.Is(err, fs.ErrNotExist) && len(entries) == 0:
			continue
		case errors.Is(err, transfer.ErrTooBig) && total == 0:
			return nil, fmt.Errorf("the runner's %s %s holds more than %s=%s, the most prepare_job copies from the runner's disk into the job's pod: raise %s or keep the directory smaller",
				t.what, host, EnvCopyLimit, quantity(limit), EnvCopyLimit)
		case errors.Is(err, transfer.ErrTooBig):
			return nil, fmt.Errorf("the runner's %s %s holds more than the %s that %s=%s leaves after the %s copied before it (the workspace, _tool and _github_home count together): raise %s or keep the directory smaller",
				t.what, host, quantity(limit-total), EnvCopyLimit, quantity(limit), quantity(total), EnvCopyLimit)
		case err != nil:
			return nil, fmt.Errorf("cannot copy the runner's %s %s into the job's pod: %w", t.what, host, err)
		}
		total += size
		disk.dirs = append(disk.dirs, runnerDir{what: t.what, host: host, container: t.container, entries: entries, size: size, workspace: t.what == "workspace"})
	}
	return disk, nil
}

// quantity is n bytes as a Kubernetes quantity (1Gi, 512Mi, 1000).
func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// copyJobs are the jobs that put d into the job container, in order: each
// stages at most maxBytes of files (a bigger file goes alone) and
// maxEntries entries
// (parents come before their contents, so a batch finds the directories an
// earlier one made); the last one sets the directories' modes.
func (d *runnerDir) copyJobs(maxBytes int64, maxEntries int) ([]client.Job, error) {
	fail := shell.Quote("cannot copy the runner's " + d.what + " to " + d.container + " in the job container")
	var jobs []client.Job
	for start := 0; start < len(d.entries); {
		end, bytes := start, int64(0)
		for end < len(d.entries) && end-start < maxEntries && (end == start || bytes+d.entries[end].Size <= maxBytes) {
			bytes += d.entries[end].Size
			end++
		}
		s := transfer.NewScript(client.NewJobID("copy"), "copy the runner's "+d.what)
		s.Printf("mkdir -p %s || fail %s\n", shell.Quote(d.container), fail)
		if err := s.Tree(d.container, d.entries[start:end], fail); err != nil {
			return nil, fmt.Errorf("the runner's %s: %w", d.what, err)
		}
		if end == len(d.entries) {
			s.DirModes(d.container, d.entries, fail)
			if d.workspace {
				s.WriteString(actionMetaScript())
				s.Printf("meta_scan %s 0 || fail %s\n", shell.Quote(d.container), shell.Quote("cannot list the workspace's action metadata files"))
			}
		}
		jobs = append(jobs, s.Job("copy.sh"))
		start = end
	}
	return jobs, nil
}

// copyRunnerDisk runs the jobs that copy disk into the job's pod, through
// its shim; an empty disk costs nothing. Each file's size and sha256 are
// checked by the shim when it arrives.
func copyRunnerDisk(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod, disk *runnerDisk) error {
	if disk.empty() {
		return nil
	}
	start := time.Now()
	var files int
	var size int64
	for i := range disk.dirs {
		d := &disk.dirs[i]
		if len(d.entries) == 0 {
			continue
		}
		jobs, err := d.copyJobs(copyBatchBytes, copyBatchEntries)
		if err != nil {
			return err
		}
		for _, job := range jobs {
			res, out, err := c.runHelper(ctx, h, pod, job, client.Options{FromEnd: true, ReconnectTimeout: h.Settings.ReconnectTimeout})
			if err != nil {
				return fmt.Errorf("cannot copy the runner's %s %s into the job container: %w", d.what, d.host, err)
			}
			if res.ExitCode != 0 {
				return fmt.Errorf("copying the runner's %s %s into the job container failed (exit code %d): %s", d.what, d.host, res.ExitCode, firstLine(out))
			}
		}
		for _, e := range d.entries {
			if !e.Dir && e.Link == "" {
				files++
			}
		}
		size += d.size
	}
	fmt.Fprintf(h.Stdout, "tether: copied %d files (%d bytes) of the runner's workspace, tool cache and home directory into the pod in %s\n",
		files, size, time.Since(start).Round(time.Millisecond))
	return nil
}
