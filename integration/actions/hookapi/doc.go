// Package hookapi is the GitHub Actions runner's container hook contract,
// as the runner speaks it (actions/runner HookInput.cs, HookResponse.cs):
// the one JSON line the runner writes on the hook's stdin (Input, with the
// command's arguments: PrepareJobArgs, ScriptStepArgs, Container), the
// response file the hook writes for the runner (PrepareResponse,
// StepResponse) and the state the runner carries from one command to the
// next (State).
//
// It holds data and its encoding only: no Kubernetes, no I/O beyond
// reading the input and writing the response file. The hook's commands
// (package actions) and anything that stands in for the runner (tests,
// benchmarks) share it.
package hookapi
