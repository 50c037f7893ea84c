package actions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
)

// collectLoop prints each file-command file (its quoted paths fill in
// the list) as a header line "F <size> <sha256 or -> <path>", its bytes
// and a newline, or "M <path>" for a file that does not exist, then
// "END". sha256sum is used where the image has it; the size is always
// checked.
const collectLoop = `for f in %s; do
  if [ -f "$f" ]; then
    n=$(wc -c < "$f" | tr -d ' ') || exit 1
    s=$( (sha256sum < "$f" 2>/dev/null || echo -) | cut -c1-64)
    printf 'F %%s %%s %%s\n' "$n" "$s" "$f"
    cat "$f" || exit 1
    printf '\n'
  else
    printf 'M %%s\n' "$f"
  fi
done
printf 'END\n'
`

// collectScript is the script that lists the files at paths.
func collectScript(paths []string) []byte {
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = shell.Quote(p)
	}
	return []byte("#!/bin/sh\n" + fmt.Sprintf(collectLoop, strings.Join(quoted, " ")))
}

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
	script := kube.FilesDir + "/collect.sh"
	job := client.Job{
		ID:      client.NewJobID("collect"),
		Scripts: []string{script},
		Files:   []client.File{{Path: script, Content: collectScript(paths)}},
	}
	if meta != nil {
		job.Files[0].Content = append(job.Files[0].Content, actionMetaScript()+"meta_scan "+shell.Quote(meta.container)+" 1\n"...)
	}
	var out lockedBuffer
	res, err := kube.Run(ctx, c.transport(h, pod), job, client.Options{Output: &out, Logger: h.logger(), From: from, ReconnectTimeout: h.Settings.ReconnectTimeout})
	if err != nil {
		return fmt.Errorf("read them from the job container: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("reading them in the job container failed with exit code %d: %s", res.ExitCode, firstLine(out.Bytes()))
	}
	got, _, rest, err := parseListing(out.Bytes())
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

// parseCollected parses collectLoop's output: container path → content
// for the files that exist. Any mismatch of size or sha256, or a missing
// END, is an error.
func parseCollected(b []byte) (map[string][]byte, error) {
	got, _, _, err := parseListing(b)
	return got, err
}

// parseListing parses one listing in collectLoop's format up to its END
// line: the files' contents, the paths of "S <size> <path>" lines (files
// left out), and what follows END. Any mismatch of size or sha256, or a
// missing END, is an error.
func parseListing(b []byte) (got map[string][]byte, skipped []string, rest []byte, err error) {
	got = map[string][]byte{}
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil, nil, nil, errors.New("the listing ended early (no END line)")
		}
		line := string(b[:i])
		b = b[i+1:]
		switch {
		case line == "END":
			return got, skipped, b, nil
		case strings.HasPrefix(line, "M "):
			continue
		case strings.HasPrefix(line, "S "):
			if f := strings.SplitN(line, " ", 3); len(f) == 3 {
				skipped = append(skipped, f[2]+" ("+f[1]+" bytes)")
			}
			continue
		case strings.HasPrefix(line, "F "):
		default:
			return nil, nil, nil, fmt.Errorf("unexpected line in the listing: %q", line)
		}
		fields := strings.SplitN(line, " ", 4)
		if len(fields) != 4 {
			return nil, nil, nil, fmt.Errorf("malformed header in the listing: %q", line)
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil || n < 0 || n+1 > len(b) {
			return nil, nil, nil, fmt.Errorf("file %s: its size %q does not match what arrived", fields[3], fields[1])
		}
		content, after := b[:n], b[n:]
		if after[0] != '\n' {
			return nil, nil, nil, fmt.Errorf("file %s: more bytes arrived than its size %d", fields[3], n)
		}
		if fields[2] != "-" {
			sum := sha256.Sum256(content)
			if hex.EncodeToString(sum[:]) != fields[2] {
				return nil, nil, nil, fmt.Errorf("file %s: its sha256 does not match what arrived", fields[3])
			}
		}
		got[fields[3]] = bytes.Clone(content)
		b = after[1:]
	}
}

// firstLine is b's first line, for an error message.
func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}
