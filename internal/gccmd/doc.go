// Package gccmd is the command `tether gc` over internal/gc's cleaner:
// its flags (Options.AddFlags), their checks and translation into the
// cleaner's options (Validate, CleanerOptions), the kubeconfig loading of
// a cleaner that deletes hundreds of objects (LoadKubeConfig), and the run
// with its report and exit codes (Run). cmd/tether keeps the help text
// and the call, in kubectl's Complete/Validate/Run shape.
//
// It is internal: a runner that wants the cleaner uses internal/gc's
// rules through `tether gc` (a CronJob in deploy/). It must never import
// a command (cmd/...) or an integration (integration/...).
package gccmd
