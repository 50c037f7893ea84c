// Package actions is Tether's GitHub Actions runner container hook: the
// program the runner starts (through a launcher named by
// ACTIONS_RUNNER_CONTAINER_HOOKS) for every container operation of a job.
//
// It holds the four commands (PrepareJob, RunScriptStep, RunContainerStep,
// CleanupJob) as functions that return the hook's exit code, and Main,
// which reads the runner's input and runs one of them. Inside, a command
// returns an error; the exit code is decided in one place (Hook.exitCode):
// a step's own non-zero exit code passes through as the hook's, a cancel
// or an outcome that cannot be known is a failure with its reason on
// stderr.
//
// The job runs in one Kubernetes pod built with client/kube: the job
// container runs tether-shim in serve mode, the workflow's services are
// native sidecars. Each script step is a client.Job, so a dropped API
// connection is resumed and a step's exit code cannot be forged by its
// output. A container step is an ephemeral container of the same pod
// whose command is the pod's tether-shim: the step's program runs as a
// job of that shim, so its output travels as the shim's records, byte
// for byte and resumed by offset after a cut, exactly like a script
// step's, and its exit code is the shim's status record's.
//
// # Packages
//
// The runner's contract and the pure parts live in packages of their own,
// each with a dependency test (deps_test.go) that keeps its arrows:
//
//	hookapi              the runner's wire contract: the input on stdin, the
//	                     response file, the state; no project package
//	internal/shell       quoting, word splitting, exportable names, the fail
//	                     function of the generated scripts; no project package
//	internal/dockeropts  the workflow's docker create options as Kubernetes
//	                     container fields; internal/shell only
//	internal/transfer    files between the runner's disk and the job container
//	                     through the shim: staged files and the script that
//	                     puts them in place, the listing that brings them back;
//	                     client, client/kube and internal/shell only
//	internal/ephemeral   a container step's ephemeral container until it runs;
//	                     client/kube only
//
// This package (the commands, the job pod's shape, the API calls) imports
// them, the client (client, client/kube), the settings layer (settings),
// the protocol and internal helpers (internal/cmdutil, internal/contract,
// internal/version); never a command (cmd/...), another integration
// (integration/...) or the shim (deps_test.go checks it). None of its
// packages imports it. The settings arrive in a Settings value
// (SettingsFromEnv builds one).
package actions
