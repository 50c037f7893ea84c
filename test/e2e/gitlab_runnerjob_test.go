//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"strings"
)

// standInRun is one job run through the stand-in as the runner runs it.
type standInRun struct {
	// Log is the job log: prepare's output, then every stage's stdout and
	// stderr in order.
	Log string
	// Codes and Written are each stage's exit code and what it wrote to
	// BUILD_EXIT_CODE_FILE; a stage the runner skipped is absent.
	Codes, Written map[string]string
	// Failed is the first stage that failed ("" when none did).
	Failed string
}

// runJob runs a whole job as GitLab Runner does (common/build.go:
// executeScript): prepare, then prepare_script, get_sources,
// restore_cache, download_artifacts and step_script (with commands) until
// one fails; then after_script, archive_cache (archive_cache_on_failure
// after a failure), upload_artifacts_on_success (…_on_failure) and
// cleanup_file_variables, whatever happened; the runner skips a stage
// that has nothing to do. cleanup_exec runs at the test's end.
func (r *runnerStandIn) runJob(ctx context.Context, commands ...string) *standInRun {
	r.t.Helper()
	res := &standInRun{Codes: map[string]string{}, Written: map[string]string{}}
	var log strings.Builder
	prepared := r.prepare(ctx)
	log.WriteString(prepared)
	stage := func(name string, cmds ...string) bool {
		out, code, written, ran := r.runStage(ctx, name, cmds...)
		if !ran {
			return true
		}
		log.WriteString(out)
		log.WriteString(r.stderr)
		res.Codes[name] = strconv.Itoa(code)
		res.Written[name] = written
		if code != 0 && res.Failed == "" {
			res.Failed = name
		}
		return code == 0
	}
	for _, name := range []string{"prepare_script", "get_sources", "restore_cache", "download_artifacts", "step_script"} {
		var cmds []string
		if name == "step_script" {
			cmds = commands
		}
		if !stage(name, cmds...) {
			break
		}
	}
	stage("after_script")
	if res.Failed == "" {
		stage("archive_cache")
	} else {
		stage("archive_cache_on_failure")
	}
	if res.Failed == "" {
		stage("upload_artifacts_on_success")
	} else {
		stage("upload_artifacts_on_failure")
	}
	stage("cleanup_file_variables")
	res.Log = log.String()
	r.t.Logf("job %s's log after prepare's:\n%s", r.jobID, strings.TrimPrefix(res.Log, prepared))
	return res
}
