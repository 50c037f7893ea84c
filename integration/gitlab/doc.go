// Package gitlab is Tether's GitLab Runner Custom executor driver: the
// four commands the runner calls for every job (config_exec, prepare_exec,
// run_exec, cleanup_exec), as functions over the driver's settings, the
// runner's environment and the job log's writers, each returning the exit
// code the runner's contract asks for. `tether gitlab` is this package
// behind a command line; a runner or a test harness can call it in
// process.
//
// The steps follow kubectl's options pattern:
//
//	var cfg gitlab.Settings
//	pos, err := gitlab.Parse(&cfg, args, os.Getenv) // flags, then the config file (NewFlagSet, Complete, Validate)
//	code := gitlab.Prepare(ctx, &cfg, os.Getenv, os.Stdout)
//	code = gitlab.Run(ctx, &cfg, os.Getenv, script, stage, os.Stdout, os.Stderr)
//	code = gitlab.Cleanup(ctx, &cfg, os.Getenv, os.Stderr)
//
// or Command(ctx, &cfg, os.Getenv, name, pos, stdout, stderr), which opens
// the driver's structured log the settings ask for around any of them.
//
// # What the package owns
//
// The job's pod (the job's image and services, the settings' pod shaping,
// the builds and cache volumes, the helper container for the stages that
// need git or gitlab-runner-helper, the job's labels and timeout); the
// routing of each stage to its container; how a stage's result becomes the
// runner's exit codes (BUILD_FAILURE_EXIT_CODE with the script's code in
// BUILD_EXIT_CODE_FILE, SYSTEM_FAILURE_EXIT_CODE); the check of the
// runner's permissions before a pod exists; the advice that names the
// setting behind a refused pod or an image that cannot be pulled; the
// replacement of a pod an earlier prepare of the same job left; the
// gitlab-runner command the shims offer for gitlab-runner-helper, and
// prepare's warning when a job's caches and artifacts have neither; and
// the job log's lines (the pod's progress as sentences, what happened to a
// stage's connection, how it ended).
//
// # What is public
//
// Settings (with its flags and config file: NewFlagSet, Parse, Complete,
// Validate), the four commands, Command, and Env: what a runner author
// needs to run jobs with Tether's names, messages and exit codes. The
// rules and messages behind them (access checks, advice, leftovers, stage
// outcomes, job-log sentences) stay unexported: their wording is for the
// job log's reader, not a contract, and may change with any release. The
// runner's contract itself (the job response, exit code variables,
// stages, pull policies, the RBAC permissions) is parsed by its internal
// package runnerapi; Permissions and RBACFile export the permissions for
// the project's manifests and their tests.
//
// # Imports
//
// This package imports the client (client, client/kube), the settings
// layer (settings), the protocol, its own runnerapi and internal helpers
// (internal/cmdutil, internal/contract, internal/version); never a command
// (cmd/...), another integration (integration/...) or the shim
// (deps_test.go checks it).
package gitlab
