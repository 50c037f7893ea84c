//go:build e2e

package e2e

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// This file generates stage scripts the way GitLab Runner v18.1 does for
// the Custom executor with its bash shell, so the driver runs what the
// real runner sends. It follows, line by line:
//
//   - shells/bash.go: BashWriter (Line, Command, Variable with file-type
//     variables written under the temporary directory $CI_PROJECT_DIR.tmp,
//     SourceEnv, IfCmd, IfCmdWithOutput, Else, EndIf, Cd, MkDir, RmFile,
//     Noticef/Warningf/Printf with their ANSI colours, Finish: the
//     `#!/usr/bin/env bash` line, `trap exit 1 TERM`, pipefail and errexit,
//     `set +o noclobber`, the body as `: | eval $'…'`, `exit 0`) and
//     helpers/shell_escape.go (ShellEscape, ANSI-C quoting);
//   - shells/abstract.go: which stage writes what (writeScript),
//     writeExports, writeCdBuildDir, guardRunnerCommand (`if gitlab-runner
//     --version >/dev/null 2>&1; then … else echo "Missing gitlab-runner.
//     ACTION is disabled."; fi`), cacheFile (the archive path relative to
//     the project directory), cacheExtractor / addExtractCacheCommand
//     (`cache-extractor --file F --timeout 10`), archiveCache /
//     addCacheUploadCommand (`cache-archiver --file F --timeout 10 --path
//     P … [--untracked]`), downloadAllArtifacts / downloadArtifacts
//     (`artifacts-downloader --url U --token T --id N`), writeUploadArtifacts
//     / writeUploadArtifact (`artifacts-uploader --url U --token T --id N
//     --path P … --artifact-format zip --artifact-type archive`),
//     changeFilesOwnership, writeCommands (`echo $ COMMAND` before each),
//     writeAfterScript, writeCleanupScript; a stage with nothing to do is
//     skipped (common.ErrSkipBuildStage: the runner never calls run_exec);
//   - executors/custom/custom.go: the runner command is `gitlab-runner`
//     (RegisterExecutor("custom", "gitlab-runner")).
//
// Feature flags are at their defaults. Not generated: get_sources' git
// clone and fetch (the tests use GIT_STRATEGY none), remote caches (no
// [runners.cache]: the archive stays in cache-dir), fallback cache keys,
// artifacts metadata, and debug trace.

// runnerCommand is the Custom executor's runner command.
const runnerCommand = "gitlab-runner"

// The ANSI sequences of the runner's helpers/colors.go.
const (
	ansiBoldGreen = "\033[32;1m"
	ansiYellow    = "\033[0;33m"
	ansiReset     = "\033[0;m"
)

// runnerJob is what the generator needs of the runner's common.Build.
type runnerJob struct {
	ID    int64
	Token string
	// URL is the GitLab instance (the runner's --url; the coordinator).
	URL string
	// Name and Ref make the default cache key (NAME/REF).
	Name, Ref string
	// BuildsDir and CacheDir are what `tether gitlab config` returned.
	BuildsDir, CacheDir string
	// ProjectPath is the project's path under BuildsDir.
	ProjectPath  string
	Variables    []runnerVar
	Caches       []runnerCache
	Artifacts    []runnerArtifact
	Dependencies []runnerDependency
}

// runnerVar is a job variable (common.JobVariable).
type runnerVar struct {
	Key, Value string
	File       bool
}

// runnerCache is one `cache:` entry (common.Cache).
type runnerCache struct {
	Key       string   `json:"key"`
	Untracked bool     `json:"untracked"`
	Policy    string   `json:"policy"`
	Paths     []string `json:"paths"`
	When      string   `json:"when"`
}

// runnerArtifact is one `artifacts:` entry (common.Artifact).
type runnerArtifact struct {
	Name      string   `json:"name"`
	Untracked bool     `json:"untracked"`
	Paths     []string `json:"paths"`
	When      string   `json:"when"`
	Type      string   `json:"artifact_type"`
	Format    string   `json:"artifact_format"`
	ExpireIn  string   `json:"expire_in"`
}

// runnerDependency is a job whose artifacts this one downloads
// (common.Dependency).
type runnerDependency struct {
	ID            int64  `json:"id"`
	Token         string `json:"token"`
	Name          string `json:"name"`
	ArtifactsFile struct {
		Filename string `json:"filename"`
		Size     int64  `json:"size"`
	} `json:"artifacts_file"`
}

// projectDir is the runner's FullProjectDir.
func (j *runnerJob) projectDir() string { return path.Join(j.BuildsDir, j.ProjectPath) }

// tmpDir is the runner's TmpProjectDir: the project directory + ".tmp".
func (j *runnerJob) tmpDir() string { return j.projectDir() + ".tmp" }

// allVariables is a short form of the runner's GetAllVariables: its
// predefined variables first, then the job's.
func (j *runnerJob) allVariables() []runnerVar {
	vars := []runnerVar{
		{Key: "CI_BUILDS_DIR", Value: j.BuildsDir},
		{Key: "CI_PROJECT_DIR", Value: j.projectDir()},
		{Key: "CI_SERVER", Value: "yes"},
		{Key: "CI_JOB_ID", Value: strconv.FormatInt(j.ID, 10)},
		{Key: "CI_JOB_TOKEN", Value: j.Token},
		{Key: "CI_SERVER_URL", Value: j.URL},
	}
	return append(vars, j.Variables...)
}

// bashWriter is the runner's BashWriter with its default feature flags.
type bashWriter struct {
	b      strings.Builder
	indent int
	tmp    string
}

func (w *bashWriter) line(s string) {
	w.b.WriteString(strings.Repeat("  ", w.indent) + s + "\n")
}

func (w *bashWriter) linef(format string, a ...any) { w.line(fmt.Sprintf(format, a...)) }

func (w *bashWriter) buildCommand(cmd string, args ...string) string {
	list := []string{shellEscape(cmd)}
	for _, a := range args {
		list = append(list, shellEscape(a))
	}
	return strings.Join(list, " ")
}

func (w *bashWriter) command(cmd string, args ...string) { w.line(w.buildCommand(cmd, args...)) }

func (w *bashWriter) tmpFile(name string) string { return path.Join(w.tmp, name) }

func (w *bashWriter) variable(v runnerVar) {
	if v.File {
		f := w.tmpFile(v.Key)
		w.linef("mkdir -p %q", w.tmp)
		w.linef("printf '%%s' %s > %q", shellEscape(v.Value), f)
		w.linef("export %s=%q", shellEscape(v.Key), f)
		return
	}
	w.linef("export %s=%s", shellEscape(v.Key), shellEscape(v.Value))
}

func (w *bashWriter) sourceEnv(p string) {
	w.linef("mkdir -p %q", w.tmp)
	w.linef("touch %q", p)
	w.linef(`while read -r line; do export "$line"; done < %q`, p)
}

func (w *bashWriter) ifFile(p string) {
	w.linef("if [ -e %q ]; then", p)
	w.indent++
}

func (w *bashWriter) ifDirectory(p string) {
	w.linef("if [ -d %q ]; then", p)
	w.indent++
}

func (w *bashWriter) ifCmd(cmd string, args ...string) {
	w.linef("if %s >/dev/null 2>&1; then", w.buildCommand(cmd, args...))
	w.indent++
}

func (w *bashWriter) ifCmdWithOutput(cmd string, args ...string) {
	w.linef("if %s; then", w.buildCommand(cmd, args...))
	w.indent++
}

func (w *bashWriter) elseBranch() {
	w.indent--
	w.line("else")
	w.indent++
}

func (w *bashWriter) endIf() {
	w.indent--
	w.line("fi")
}

func (w *bashWriter) cd(p string)     { w.command("cd", p) }
func (w *bashWriter) mkDir(p string)  { w.command("mkdir", "-p", p) }
func (w *bashWriter) rmFile(p string) { w.command("rm", "-f", p) }

func (w *bashWriter) noticef(format string, a ...any) {
	w.line("echo " + shellEscape(ansiBoldGreen+fmt.Sprintf(format, a...)+ansiReset))
}

func (w *bashWriter) warningf(format string, a ...any) {
	w.line("echo " + shellEscape(ansiYellow+fmt.Sprintf(format, a...)+ansiReset))
}

func (w *bashWriter) emptyLine() { w.line("echo") }

// finish is BashWriter.Finish(false) for the bash shell.
func (w *bashWriter) finish() string {
	var b strings.Builder
	b.WriteString("#!/usr/bin/env bash\n\n")
	b.WriteString("trap exit 1 TERM\n\n")
	b.WriteString("if set -o | grep pipefail > /dev/null; then set -o pipefail; fi; set -o errexit\n")
	b.WriteString("set +o noclobber\n")
	b.WriteString(": | eval " + shellEscape(w.b.String()) + "\n")
	b.WriteString("exit 0\n")
	return b.String()
}

// The runner's temporary file names (shells/abstract.go).
const (
	gitlabEnvFileName = "gitlab_runner_env"
	buildUIDGIDFile   = ".gitlab-build-uid-gid"
)

func (j *runnerJob) writer() *bashWriter { return &bashWriter{tmp: j.tmpDir()} }

func (j *runnerJob) writeExports(w *bashWriter) {
	for _, v := range j.allVariables() {
		w.variable(v)
	}
	env := w.tmpFile(gitlabEnvFileName)
	w.variable(runnerVar{Key: "GITLAB_ENV", Value: env})
	w.sourceEnv(env)
}

func (j *runnerJob) guardRunnerCommand(w *bashWriter, action string, f func()) {
	w.ifCmd(runnerCommand, "--version")
	f()
	w.elseBranch()
	w.warningf("Missing %s. %s is disabled.", runnerCommand, action)
	w.endIf()
}

func (j *runnerJob) changeFilesOwnership(w *bashWriter, dirs ...string) {
	w.ifFile(path.Join(j.BuildsDir, buildUIDGIDFile))
	for _, d := range dirs {
		if strings.TrimSpace(d) == "" {
			continue
		}
		w.ifDirectory(d)
		w.line(fmt.Sprintf(`chown -R "$(stat -c '%%u:%%g' '%s/%s')" '%s'`, j.BuildsDir, buildUIDGIDFile, d))
		w.endIf()
	}
	w.endIf()
}

// cacheFile is the runner's cacheFile: the key (default NAME/REF) and
// CACHE_DIR/KEY/cache.zip relative to the project directory.
func (j *runnerJob) cacheFile(key string) (string, string) {
	if key == "" {
		key = strings.TrimPrefix(path.Join("/", j.Name, j.Ref), "/")
	}
	abs := path.Join(j.CacheDir, key, "cache.zip")
	rel, err := relPath(j.projectDir(), abs)
	if err != nil {
		panic(err)
	}
	return key, rel
}

// relPath is filepath.Rel for the pod's slash-separated paths.
func relPath(base, target string) (string, error) {
	b := strings.Split(strings.Trim(path.Clean(base), "/"), "/")
	t := strings.Split(strings.Trim(path.Clean(target), "/"), "/")
	i := 0
	for i < len(b) && i < len(t) && b[i] == t[i] {
		i++
	}
	parts := make([]string, 0, len(b)-i+len(t)-i)
	for range b[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, t[i:]...)
	if len(parts) == 0 {
		return ".", nil
	}
	return strings.Join(parts, "/"), nil
}

// cacheRequestTimeout is GetCacheRequestTimeout's default (minutes).
const cacheRequestTimeout = "10"

func archiverArgs(paths []string, untracked bool) []string {
	var args []string
	for _, p := range paths {
		args = append(args, "--path", p)
	}
	if untracked {
		args = append(args, "--untracked")
	}
	return args
}

// restoreCache is writeRestoreCacheScript; false when the stage is skipped.
func (j *runnerJob) restoreCache(w *bashWriter) bool {
	j.writeExports(w)
	w.cd(j.projectDir())
	skip := true
	for _, c := range j.Caches {
		if len(archiverArgs(c.Paths, c.Untracked)) == 0 {
			continue
		}
		skip = false
		key, file := j.cacheFile(c.Key)
		if c.Policy != "" && c.Policy != "pull-push" && c.Policy != "pull" {
			w.noticef("Not downloading cache %s due to policy", key)
			continue
		}
		j.guardRunnerCommand(w, "Extracting cache", func() {
			w.noticef("Checking cache for %s...", key)
			w.ifCmdWithOutput(runnerCommand, "cache-extractor", "--file", file, "--timeout", cacheRequestTimeout)
			w.noticef("Successfully extracted cache")
			w.elseBranch()
			w.warningf("Failed to extract cache")
			w.endIf()
		})
	}
	if skip {
		return false
	}
	j.changeFilesOwnership(w, j.CacheDir, j.BuildsDir)
	return true
}

// archiveCache is cacheArchiver; onSuccess picks the entries by `when`.
func (j *runnerJob) archiveCache(w *bashWriter, onSuccess bool) bool {
	j.writeExports(w)
	w.cd(j.projectDir())
	skip := true
	for _, c := range j.Caches {
		when := c.When
		if when == "" {
			when = "on_success"
		}
		if !(when == "always" || (onSuccess && when == "on_success") || (!onSuccess && when == "on_failure")) {
			continue
		}
		args := archiverArgs(c.Paths, c.Untracked)
		if len(args) == 0 {
			continue
		}
		skip = false
		key, file := j.cacheFile(c.Key)
		if c.Policy != "" && c.Policy != "pull-push" && c.Policy != "push" {
			w.noticef("Not uploading cache %s due to policy", key)
			continue
		}
		full := append([]string{"cache-archiver", "--file", file, "--timeout", cacheRequestTimeout}, args...)
		j.guardRunnerCommand(w, "Creating cache", func() {
			w.noticef("Creating cache %s...", key)
			w.ifCmdWithOutput(runnerCommand, full...)
			w.noticef("Created cache")
			w.elseBranch()
			w.warningf("Failed to create cache")
			w.endIf()
		})
	}
	return !skip
}

// downloadArtifacts is writeDownloadArtifactsScript.
func (j *runnerJob) downloadArtifacts(w *bashWriter) bool {
	var deps []runnerDependency
	for _, d := range j.Dependencies {
		if d.ArtifactsFile.Filename != "" {
			deps = append(deps, d)
		}
	}
	if len(deps) == 0 {
		return false
	}
	j.writeExports(w)
	w.cd(j.projectDir())
	j.guardRunnerCommand(w, "Artifacts downloading", func() {
		for _, d := range deps {
			w.noticef("Downloading artifacts for %s (%d)...", d.Name, d.ID)
			w.command(runnerCommand, "artifacts-downloader", "--url", j.URL, "--token", d.Token, "--id", strconv.FormatInt(d.ID, 10))
		}
	})
	j.changeFilesOwnership(w, j.CacheDir, j.BuildsDir)
	return true
}

// uploadArtifacts is writeUploadArtifacts.
func (j *runnerJob) uploadArtifacts(w *bashWriter, onSuccess bool) bool {
	if j.URL == "" {
		return false
	}
	j.writeExports(w)
	w.cd(j.projectDir())
	skip := true
	for _, a := range j.Artifacts {
		when := a.When
		if when == "" {
			when = "on_success"
		}
		if !(when == "always" || (onSuccess && when == "on_success") || (!onSuccess && when == "on_failure")) {
			continue
		}
		paths := archiverArgs(a.Paths, a.Untracked)
		if len(paths) == 0 {
			continue
		}
		skip = false
		args := append([]string{"artifacts-uploader", "--url", j.URL, "--token", j.Token, "--id", strconv.FormatInt(j.ID, 10)}, paths...)
		if a.Name != "" {
			args = append(args, "--name", a.Name)
		}
		if a.ExpireIn != "" {
			args = append(args, "--expire-in", a.ExpireIn)
		}
		if a.Format != "" {
			args = append(args, "--artifact-format", a.Format)
		}
		if a.Type != "" {
			args = append(args, "--artifact-type", a.Type)
		}
		j.guardRunnerCommand(w, "Uploading artifacts", func() {
			w.noticef("Uploading artifacts...")
			w.command(runnerCommand, args...)
		})
	}
	return !skip
}

// writeCommands is the runner's writeCommands (no trace sections): each
// command echoed as `$ COMMAND` in bold green, then run.
func writeCommands(w *bashWriter, commands []string) {
	for _, c := range commands {
		c = strings.TrimSpace(c)
		switch {
		case c == "":
			w.emptyLine()
		case strings.Contains(c, "\n"):
			w.noticef("$ %s # collapsed multi-line command", c[:strings.Index(c, "\n")])
		default:
			w.noticef("$ %s", c)
		}
		w.line(c)
	}
}

// stageScript returns the runner's script for stage, and false when the
// runner skips the stage. User stages (step_script, build_script,
// after_script, …) run commands as writeCommands does.
func (j *runnerJob) stageScript(stage string, commands []string) (string, bool) {
	w := j.writer()
	ok := true
	switch stage {
	case "prepare_script":
		w.line("echo " + strconv.Quote("Running on $(hostname)..."))
		w.rmFile(w.tmpFile(gitlabEnvFileName))
		w.rmFile(w.tmpFile("masking.db"))
	case "get_sources":
		// GIT_STRATEGY none (handleGetSourcesStrategy).
		j.writeExports(w)
		w.variable(runnerVar{Key: "GIT_TERMINAL_PROMPT", Value: "0"})
		w.variable(runnerVar{Key: "GCM_INTERACTIVE", Value: "Never"})
		w.noticef("Skipping Git repository setup")
		w.mkDir(j.projectDir())
		j.changeFilesOwnership(w, j.BuildsDir)
	case "restore_cache":
		ok = j.restoreCache(w)
	case "download_artifacts":
		ok = j.downloadArtifacts(w)
	case "archive_cache":
		ok = j.archiveCache(w, true)
	case "archive_cache_on_failure":
		ok = j.archiveCache(w, false)
	case "upload_artifacts_on_success":
		ok = j.uploadArtifacts(w, true)
	case "upload_artifacts_on_failure":
		ok = j.uploadArtifacts(w, false)
	case "cleanup_file_variables":
		w.rmFile(w.tmpFile(gitlabEnvFileName))
		w.rmFile(w.tmpFile("masking.db"))
		for _, v := range j.allVariables() {
			if v.File {
				w.rmFile(w.tmpFile(v.Key))
			}
		}
		w.rmFile(path.Join(j.BuildsDir, buildUIDGIDFile))
	case "after_script":
		if len(commands) == 0 {
			return "", false
		}
		j.writeExports(w)
		w.cd(j.projectDir())
		w.noticef("Running after script...")
		writeCommands(w, commands)
	default:
		if len(commands) == 0 {
			return "", false
		}
		j.writeExports(w)
		w.cd(j.projectDir())
		writeCommands(w, commands)
	}
	return w.finish(), ok
}

// rawStageScript is a user stage's script with body as its commands'
// text, without writeCommands' `$ COMMAND` echo lines, so a test can
// compare the stage's output byte for byte; the project directory is made
// first, as the get_sources stage (GIT_STRATEGY none) these tests skip
// would have made it.
func (j *runnerJob) rawStageScript(body string) string {
	w := j.writer()
	j.writeExports(w)
	w.mkDir(j.projectDir())
	w.cd(j.projectDir())
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		w.line(l)
	}
	return w.finish()
}

// shellEscape is the runner's helpers.ShellEscape: the input as is when
// it is made of safe characters only, else ANSI-C quoted ($'…') with
// control bytes escaped and non-ASCII bytes as \xHH.
func shellEscape(s string) string {
	if s == "" {
		return "''"
	}
	var b strings.Builder
	escape := false
	for _, c := range []byte(s) {
		switch {
		case c == '\a':
			b.WriteString(`\a`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\v':
			b.WriteString(`\v`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\'':
			b.WriteString(`\'`)
		case c == '\\':
			b.WriteString(`\\`)
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte(",-./@_", c) >= 0:
			b.WriteByte(c)
			continue
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
		escape = true
	}
	if escape {
		return "$'" + b.String() + "'"
	}
	return b.String()
}
