package actions

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
)

// collectFileCommands runs a second job on the same shim that prints the
// file-command files into a buffer (never the step's log), checks each
// one's size and sha256, and writes them into the runner's _temp. With
// meta, the same job lists the workspace's changed action metadata files
// (actionMetaFunc), which are written into the runner's workspace; a
// failure there is a warning.
func collectFileCommands(ctx context.Context, h *Hook, c *cluster, pod *kube.Pod, from int64, files []fileCommand, meta *metaScan) error {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.container
	}
	script := transfer.ListScript(paths)
	if meta != nil {
		script = append(script, actionMetaScript()+"meta_scan "+shell.Quote(meta.container)+" 1\n"...)
	}
	job := transfer.ScriptJob(client.NewJobID("collect"), "collect.sh", script)
	res, out, err := c.runHelper(ctx, h, pod, job, client.Options{From: from, ReconnectTimeout: h.Settings.ReconnectTimeout})
	if err != nil {
		return fmt.Errorf("read them from the job container: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("reading them in the job container failed with exit code %d: %s", res.ExitCode, firstLine(out))
	}
	got, _, rest, err := transfer.ParseListing(out)
	if err != nil {
		return err
	}
	if meta != nil {
		bringBackActionMeta(h, meta, rest)
	}
	for _, f := range files {
		content, ok := got[f.container]
		if !ok {
			continue // deleted by the step: the runner finds none either
		}
		if err := os.WriteFile(f.host, content, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", f.host, err)
		}
	}
	return nil
}

// firstLine is b's first line, for an error message.
func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}
