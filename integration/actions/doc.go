// Package actions is Tether's GitHub Actions runner container hook: the
// program the runner starts (through a launcher named by
// ACTIONS_RUNNER_CONTAINER_HOOKS) for every container operation of a job.
//
// It owns the hook's contract with the runner: the one JSON line the
// runner writes on stdin (Input), the four commands (PrepareJob,
// RunScriptStep, RunContainerStep, CleanupJob) as functions that return
// the hook's exit code, the response file (PrepareResponse), the state the
// runner carries from one command to the next (State), and how a step's
// files travel between the runner's disk and the job pod over the attach
// stream (the step script and the runner's file-command files in, the
// file-command files back out, checked by size and sha256).
//
// The job runs in one Kubernetes pod built with client/kube: the job
// container runs tether-shim in serve mode, the workflow's services are
// native sidecars. Each script step is a client.Job, so a dropped API
// connection is resumed and a step's exit code cannot be forged by its
// output. A container step is an ephemeral container of the same pod: its
// log is followed with timestamps and resumed exactly after a cut, and its
// exit code is the kubelet's.
//
// The package must never import cmd/tether, the GitLab driver or anything
// specific to another CI system; the settings arrive in a Settings value
// (SettingsFromEnv builds one), so a shared settings layer can fill it in
// later.
package actions
