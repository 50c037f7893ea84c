// Package cmdutil holds what Tether's commands share and no runner
// author needs: the empty flag set of a command and its parser (flags and
// positional arguments in any order), the log settings and the logger
// they select, client-go's log routed into it, the Kubernetes clients of
// a kubeconfig, a session's progress log, summary and exit code (tether's
// own exit codes: ExitUsage, ExitTether, ExitCancelled, ExitOOMKilled),
// the --output-limit flag, the deletion of a job's pod at its end, the
// hooks a second signal runs before the process exits (OnForce), how a
// job killed for memory is said, and FirstConnect, which tells whether a
// claimed warm pod's shim was ever reached (else its job starts cold).
//
// Its users are the commands (cmd/tether, internal/runcmd,
// internal/gccmd) and the integrations (integration/...). It owns no
// state of its own beyond what a caller's context carries. It must never
// import a command (cmd/...) or an integration: they import it.
package cmdutil
