// Package poolcmd is the command `tether pool`: `check FILE` validates a
// pools file (internal/pool), `serve --config FILE` runs the controller
// (internal/poolctl) with its metrics endpoint, `status` prints each
// pool's pods, claims and misses. cmd/tether keeps the help text and the
// call.
//
// It must never import a command (cmd/...) or an integration
// (integration/...).
package poolcmd
