package actions

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tether-ci/tether/client/kube"
	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
)

// Local actions (`uses: ./path`): the runner reads a local action's
// action.yml (or action.yaml) from its own copy of the workspace before
// the step (actions/runner ActionManager.cs LoadAction), and checks that
// the files it names exist there (a JavaScript action's main, pre and post
// scripts: NodeScriptActionHandler.cs; a Dockerfile:
// ContainerActionHandler.cs). The workspace lives in the pod, where the
// checkout ran: after each script step the job that collects the
// file-command files also lists the workspace's action metadata files
// that changed since the last listing, and the hook writes them into the
// runner's workspace.
const (
	// maxActionMetaFile bounds one metadata file brought back; a larger
	// one is left out with a warning.
	maxActionMetaFile = 256 << 10
	// maxActionMetaFiles bounds how many are brought back after one step;
	// the rest are left out with a warning.
	maxActionMetaFiles = 128
	// actionMetaList is the pod's record of the metadata files the runner
	// has (cksum and path, one a line): the last listing.
	actionMetaList = kube.FilesDir + "/action-meta.list"
)

// actionMetaFunc defines meta_scan WORKSPACE EMIT for the pod's scripts:
// it lists the workspace's action.yml and action.yaml files (not under
// .git) with their sizes and sha256 (cksum where the image has no
// sha256sum) into actionMetaList and, when EMIT is 1, prints those not in
// the previous listing in transfer.ParseListing's format (an "S <size> <path>" line for
// one left out by the bounds), then END.
const actionMetaFunc = `meta_scan() {
  old=` + actionMetaList + `; new=$old.new; n=0
  : > "$new" || return 1
  find "$1" -name .git -prune -o -type f \( -name action.yml -o -name action.yaml \) -print 2>/dev/null > "$new.names"
  while IFS= read -r f; do
    size=$(wc -c < "$f" | tr -d ' ') || continue
    s=$(sha256sum < "$f" 2>/dev/null | cut -c1-64)
    [ -n "$s" ] || s=$(cksum < "$f" 2>/dev/null | tr ' ' -)
    [ -n "$s" ] || s=-
    printf '%%s %%s %%s\n' "$size" "$s" "$f" >> "$new"
    [ "$2" = 1 ] || continue
    grep -Fxq -- "$size $s $f" "$old" 2>/dev/null && continue
    n=$((n+1))
    if [ "$size" -gt %d ] || [ "$n" -gt %d ]; then printf 'S %%s %%s\n' "$size" "$f"; continue; fi
    case $s in *-*) s=- ;; esac
    printf 'F %%s %%s %%s\n' "$size" "$s" "$f"
    cat "$f" || return 1
    printf '\n'
  done < "$new.names"
  rm -f "$new.names"
  mv -f "$new" "$old"
  [ "$2" = 1 ] && printf 'END\n'
  return 0
}
`

// actionMetaScript is actionMetaFunc with its bounds.
func actionMetaScript() string {
	return fmt.Sprintf(actionMetaFunc, maxActionMetaFile, maxActionMetaFiles)
}

// metaScan is where a step's collect job looks for the workspace's action
// metadata files and where the hook writes them.
type metaScan struct {
	container string // the workspace in the job container
	host      string // the runner's copy of it
}

// stepMetaScan is the metaScan of a script step: the step's
// GITHUB_WORKSPACE (a container path under WorkDir) and the hook's own
// (the runner-host path). nil when either is missing.
func stepMetaScan(args *hookapi.ScriptStepArgs, getenv func(string) string) *metaScan {
	ctr, host := args.EnvironmentVariables["GITHUB_WORKSPACE"], getenv("GITHUB_WORKSPACE")
	if host == "" || !strings.HasPrefix(ctr, WorkDir+"/") || path.Clean(ctr) != ctr {
		return nil
	}
	return &metaScan{container: ctr, host: host}
}

// writeActionMeta writes the metadata files the pod listed (container
// path → content) into the runner's workspace, and for each action the
// files its metadata names that the runner checks exist (actionRunFiles)
// where they are missing. A path outside the workspace is refused.
func writeActionMeta(m *metaScan, got map[string][]byte) error {
	var errs []error
	for p, content := range got {
		rel, ok := strings.CutPrefix(p, m.container+"/")
		if !ok || rel == "" || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
			errs = append(errs, fmt.Errorf("%s is not a file of the workspace %s", p, m.container))
			continue
		}
		host := filepath.Join(m.host, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.WriteFile(host, content, 0o644); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range actionRunFiles(content) {
			if err := placeholder(filepath.Dir(host), f); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// actionRunFiles are the files an action's metadata names that the runner
// only checks for on its disk before it hands the step to the hook: a
// JavaScript action's main, pre and post scripts, a container action's
// Dockerfile. Metadata that does not parse names none (the runner reports
// its own error).
func actionRunFiles(metadata []byte) []string {
	var a struct {
		Runs struct {
			Using, Main, Pre, Post, Image string
		} `json:"runs"`
	}
	if yaml.Unmarshal(metadata, &a) != nil {
		return nil
	}
	var files []string
	switch u := strings.ToLower(a.Runs.Using); {
	case strings.HasPrefix(u, "node"):
		for _, f := range []string{a.Runs.Main, a.Runs.Pre, a.Runs.Post} {
			if f != "" {
				files = append(files, f)
			}
		}
	case u == "docker" && !strings.HasPrefix(strings.ToLower(a.Runs.Image), "docker://") &&
		(strings.HasSuffix(a.Runs.Image, "Dockerfile") || strings.HasSuffix(a.Runs.Image, "dockerfile")):
		files = append(files, a.Runs.Image)
	}
	return files
}

// placeholderText marks a file the hook left on the runner's disk.
const placeholderText = "tether actions: this file is in the job's pod, where the step runs; the runner only checks that it exists here\n"

// placeholder makes the file rel of the action directory dir on the
// runner's disk, if it is missing, holding placeholderText. A path that
// leaves the directory is left alone.
func placeholder(dir, rel string) error {
	rel = path.Clean(filepath.ToSlash(rel))
	if path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(placeholderText), 0o644)
}

// bringBackActionMeta parses the metadata listing (what follows the
// file-command listing) and writes it into the runner's workspace; what
// goes wrong is a warning in the step's log, as a missing file then makes
// the runner's own error.
func bringBackActionMeta(h *Hook, m *metaScan, listing []byte) {
	got, skipped, _, err := transfer.ParseListing(listing)
	if err != nil {
		h.warn("the workspace's action metadata files (action.yml, action.yaml) could not be copied to the runner, so a local action (uses: ./path) may not be found: %v", err)
		return
	}
	for _, s := range skipped {
		h.warn("the action metadata file %s is not copied to the runner: tether actions copies files of at most %d KiB, at most %d after a step", s, maxActionMetaFile>>10, maxActionMetaFiles)
	}
	if err := writeActionMeta(m, got); err != nil {
		h.warn("the workspace's action metadata files could not all be written into the runner's workspace %s: %v", m.host, err)
	}
}
