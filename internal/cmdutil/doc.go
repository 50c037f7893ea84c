// Package cmdutil holds what Tether's commands share and no runner
// author needs: the empty flag set of a command and its parser (flags and
// positional arguments in any order), the log settings and the logger
// they select, client-go's log routed into it, the Kubernetes clients of
// a kubeconfig, and how a job killed for memory is said and exited.
//
// Its users are the command (cmd/tether) and the integrations
// (integration/...). It owns no state. It must never import a command
// (cmd/...) or an integration: they import it.
package cmdutil
