// Package stage is the light half of the GitLab driver's per-job agent:
// the stage process GitLab Runner calls as run_exec (cmd/tether-stage),
// where a job's agent listens, and the frames both ends exchange.
//
// `tether gitlab prepare` starts `tether gitlab agent` for the job: a
// detached process that keeps the job's Kubernetes configuration and
// clients loaded and serves the job's stages on a unix socket in a
// private directory named from the runner's and the job's IDs (Dir). A
// stage process connects, sends its arguments and environment (Request),
// relays the stage's output byte-exact to its own stdout and stderr, turns
// the runner's SIGTERM or SIGINT into a cancel frame, and exits with the
// code the agent sends: the runner's BUILD_FAILURE_EXIT_CODE /
// SYSTEM_FAILURE_EXIT_CODE contract is the agent's `tether gitlab run`,
// unchanged.
//
// The stage process never loses a stage to a missing or dead agent: when
// it cannot reach one, or the agent declines the stage, it replaces itself
// (execve, same process ID, so the runner's signals still reach it) with
// `tether gitlab run` and the same arguments; when the agent dies after the
// stage began, it hands that process the stage's job ID, the offset of the
// shim's stream where the stage began and the number of output bytes
// already written (ResumeVar), so the stage is followed to its end without
// running twice and without a byte lost or repeated.
//
// The stage process is built twice. The Go build (cmd/tether-stage over
// this package) is the reference. The C build (native/, C11 and POSIX,
// static) does exactly the same and is what `make build`, the release's
// linux binaries and the tether image ship when a C compiler is found
// (scripts/build-stage.sh): a stage process's time is mostly its start,
// and a Go program's runtime takes ≈ 200 page faults before main where a
// static C program takes ≈ 27, each 20–60 µs on the virtual machines
// runners use. binaries_test.go runs one table of cases against both
// builds (and the C build under the sanitizers) with a stub agent that
// uses this package's encoders; a change of the stage process's behaviour
// or of the wire is made in both.
//
// This package uses the standard library alone, and on the stage
// process's path no more of it than it must: a stage process that loads
// no Kubernetes client starts as fast as a Go program can (a hello world's
// time), where the `tether` binary spends tens of milliseconds initialising
// its packages. It talks to the agent over a blocking socket on its main
// goroutine (no net package, no poller) with frames whose payloads are
// encoded by hand (no reflection): on a machine where every page fault and
// thread costs, each of them was milliseconds of a stage.
package stage
