package actions

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tether-ci/tether/integration/actions/hookapi"
	"github.com/tether-ci/tether/integration/actions/internal/shell"
	"github.com/tether-ci/tether/integration/actions/internal/transfer"
)

// ActionsDir is the runner's _work/_actions in the job container: the
// actions the runner downloaded, each in <owner>/<repo>/<ref>.
const ActionsDir = "/__w/_actions"

// MaxActionSize bounds the files of one delivered action directory: they
// travel over the attach stream and land in the shim's memory-backed
// files volume before they are copied into place.
const MaxActionSize = 64 << 20

// actionCompletedSuffix marks a finished download: the runner writes
// <dir>.completed next to each action directory it downloaded
// (actions/runner ActionManager.cs, the watermark file).
const actionCompletedSuffix = ".completed"

// actionRef returns the action directory (a container path under
// ActionsDir) that p lies in: the shortest <owner>/<repo>/<ref>[/...]
// prefix of p whose download watermark exists on the runner (a ref may
// contain slashes), else <owner>/<repo>/<ref>. ok is false when p is not
// under ActionsDir; a path that is not clean (.., //) is an error.
func actionRef(actionsHost, p string) (dir string, ok bool, err error) {
	rel, under := strings.CutPrefix(p, ActionsDir+"/")
	if !under {
		return "", false, nil
	}
	if rel == "" || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "/../") || strings.HasSuffix(rel, "/..") {
		return "", false, fmt.Errorf("%s: a path under %s must be clean (no .., no //)", p, ActionsDir)
	}
	parts := strings.Split(rel, "/")
	if len(parts) < 3 {
		return "", false, nil // not inside one action's directory
	}
	n := 3
	for i := 3; i <= len(parts); i++ {
		if _, err := os.Stat(filepath.Join(actionsHost, filepath.FromSlash(strings.Join(parts[:i], "/"))) + actionCompletedSuffix); err == nil {
			n = i
			break
		}
	}
	return ActionsDir + "/" + strings.Join(parts[:n], "/"), true, nil
}

// hostActionsDir is the runner's _work/_actions: beside its _work/_temp
// (RUNNER_TEMP), as the runner lays out its work directory.
func hostActionsDir(runnerTemp string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(runnerTemp)), "_actions")
}

// readActionDir lists the runner's copy of the action directory dir
// (under actionsHost): its directories, regular files with their modes
// and symlinks, at most MaxActionSize bytes of content.
func readActionDir(actionsHost, dir string) ([]transfer.Entry, error) {
	root := filepath.Join(actionsHost, filepath.FromSlash(strings.TrimPrefix(dir, ActionsDir+"/")))
	entries, _, err := transfer.Walk(root, MaxActionSize, false)
	switch {
	case errors.Is(err, transfer.ErrTooBig):
		return nil, fmt.Errorf("the action %s holds more than %d MiB: tether actions delivers at most that much per action", dir, MaxActionSize>>20)
	case errors.Is(err, fs.ErrNotExist) && len(entries) == 0:
		return nil, fmt.Errorf("the action %s is not on the runner at %s: the runner downloads actions there before the job starts", dir, root)
	case err != nil:
		return nil, fmt.Errorf("read the action %s at %s: %w", dir, root, err)
	}
	return entries, nil
}

// stepActions returns the action directories a step needs, in order of
// first mention: those its entry point, its arguments and its
// GITHUB_ACTION_PATH lie in (a JavaScript action's main file, a composite
// action's own scripts).
func stepActions(actionsHost, entryPoint string, argv []string, env map[string]string) ([]string, error) {
	var dirs []string
	for _, p := range append(append([]string{entryPoint}, argv...), env["GITHUB_ACTION_PATH"]) {
		dir, ok, err := actionRef(actionsHost, p)
		if err != nil {
			return nil, err
		}
		if ok && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	return dirs, nil
}

// deliverActions adds to plan the files of every action directory the step
// needs (stepActions) that is not in delivered, and to its script the
// commands that put them in place (Script.Tree): the directory is made
// afresh (so a repeated delivery, after a step whose response the runner
// did not read, is harmless). A step whose entry point is one of
// the runner's externals (ExternalsDir) checks that it is there.
func deliverActions(plan *stepPlan, s *transfer.Script, args *hookapi.ScriptStepArgs, argv []string, runnerTemp string, delivered []string) error {
	host := hostActionsDir(runnerTemp)
	dirs, err := stepActions(host, args.EntryPoint, argv, args.EnvironmentVariables)
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if slices.Contains(delivered, dir) {
			continue
		}
		files, err := readActionDir(host, dir)
		if err != nil {
			return err
		}
		fail := shell.Quote("cannot put the action " + dir + " in place in the job container")
		s.Printf("rm -rf %[1]s && mkdir -p %[1]s || fail %[2]s\n", shell.Quote(dir), fail)
		if err := s.Tree(dir, files, fail); err != nil {
			return fmt.Errorf("the action %s: %w", dir, err)
		}
		plan.actions = append(plan.actions, dir)
	}
	if strings.HasPrefix(args.EntryPoint, ExternalsDir+"/") {
		s.Printf("[ -x %s ] || fail %s\n", shell.Quote(args.EntryPoint), shell.Quote(externalsAdvice(args.EntryPoint)))
	}
	return nil
}

// recordActions writes run_script_step's response: the job's state with
// the action directories the step delivered, so later steps (a post step,
// the next use of the same action) do not deliver them again.
func recordActions(st *hookapi.State, dirs []string, responseFile string) error {
	next := *st
	next.Actions = slices.Clone(st.Actions)
	for _, d := range dirs {
		if !slices.Contains(next.Actions, d) {
			next.Actions = append(next.Actions, d)
		}
	}
	if err := hookapi.WriteResponse(responseFile, &hookapi.StepResponse{State: &next}); err != nil {
		return fmt.Errorf("the step succeeded, but %w", err)
	}
	return nil
}
