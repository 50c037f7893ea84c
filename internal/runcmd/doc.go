// Package runcmd is the command `tether run`: every flag of it, for all
// backends (Flags, NewFlagSet; the pod settings are settings.Pod and
// settings.Security), their checks (Validate), and the run of the job on
// the backend they choose (Run): the local shim (client/local), a
// docker/podman container (client/docker) or a Kubernetes pod
// (client/kube), with the progress log, the job's summary and tether's
// exit code. cmd/tether keeps the help text, the parse and the call, and
// the process concerns (signals: a hook registered with cmdutil.OnForce
// runs before a second signal exits).
//
// It is internal: a runner uses client and its backends, with settings,
// directly. It must never import a command (cmd/...) or an integration
// (integration/...).
package runcmd
