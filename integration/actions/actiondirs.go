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

// actionFile is one entry of an action directory to deliver.
type actionFile struct {
	rel     string      // slash-separated, relative to the action directory
	mode    fs.FileMode // permission bits of a regular file
	content []byte      // a regular file's content
	link    string      // a symlink's target ("" for other entries)
	dir     bool
}

// readActionDir reads the runner's copy of the action directory dir
// (under actionsHost): its directories, regular files with their modes
// and symlinks, at most MaxActionSize bytes of content.
func readActionDir(actionsHost, dir string) ([]actionFile, error) {
	root := filepath.Join(actionsHost, filepath.FromSlash(strings.TrimPrefix(dir, ActionsDir+"/")))
	var files []actionFile
	total := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			files = append(files, actionFile{rel: rel, dir: true})
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			files = append(files, actionFile{rel: rel, link: target})
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += int(info.Size())
			if total > MaxActionSize {
				return fmt.Errorf("the action %s holds more than %d MiB: tether actions delivers at most that much per action", dir, MaxActionSize>>20)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files = append(files, actionFile{rel: rel, mode: info.Mode().Perm(), content: b})
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) && len(files) == 0 {
		return nil, fmt.Errorf("the action %s is not on the runner at %s: the runner downloads actions there before the job starts", dir, root)
	}
	if err != nil {
		return nil, fmt.Errorf("read the action %s at %s: %w", dir, root, err)
	}
	return files, nil
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
// needs (stepActions) that is not in delivered, and to the wrapper w the
// commands that put them in place: the directory is made afresh (so a
// repeated delivery, after a step whose response the runner did not read,
// is harmless), each file is copied with its mode and removed from the
// shim's memory-backed files volume. A step whose entry point is one of
// the runner's externals (ExternalsDir) checks that it is there.
func deliverActions(plan *stepPlan, w *strings.Builder, args *ScriptStepArgs, argv []string, runnerTemp string, delivered []string) error {
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
		fail := shellQuote("cannot put the action " + dir + " in place in the job container")
		fmt.Fprintf(w, "rm -rf %[1]s && mkdir -p %[1]s || fail %[2]s\n", shellQuote(dir), fail)
		for _, f := range files {
			dst := shellQuote(dir + "/" + f.rel)
			switch {
			case f.dir:
				fmt.Fprintf(w, "mkdir -p %s || fail %s\n", dst, fail)
			case f.link != "":
				fmt.Fprintf(w, "ln -s %s %s || fail %s\n", shellQuote(f.link), dst, fail)
			default:
				src := stageFile(&plan.job, f.content, f.mode|0o400)
				fmt.Fprintf(w, "cp %[1]s %[2]s && rm -f %[1]s && chmod %[3]o %[2]s || fail %[4]s\n", src, dst, f.mode, fail)
			}
		}
		plan.actions = append(plan.actions, dir)
	}
	if strings.HasPrefix(args.EntryPoint, ExternalsDir+"/") {
		fmt.Fprintf(w, "[ -x %s ] || fail %s\n", shellQuote(args.EntryPoint), shellQuote(externalsAdvice(args.EntryPoint)))
	}
	return nil
}

// recordActions writes run_script_step's response: the job's state with
// the action directories the step delivered, so later steps (a post step,
// the next use of the same action) do not deliver them again.
func recordActions(h *Hook, st *State, dirs []string, responseFile string) int {
	next := *st
	next.Actions = slices.Clone(st.Actions)
	for _, d := range dirs {
		if !slices.Contains(next.Actions, d) {
			next.Actions = append(next.Actions, d)
		}
	}
	if err := WriteResponse(responseFile, &StepResponse{State: &next}); err != nil {
		return h.fail("the step succeeded, but %v", err)
	}
	return 0
}
