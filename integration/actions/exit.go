package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// command is one of the hook's commands: it returns what went wrong (nil
// for success) and leaves in after what must run once its outcome is
// written.
type command func(ctx context.Context, h *Hook, in *hookapi.Input, after *afterExit) error

// afterExit holds what a command leaves for after its outcome is written
// (the rollback of a failed prepare_job, a container step's env Secret),
// as a deferred call runs after its function's result is computed: what
// it says follows the command's own error line.
type afterExit struct {
	fns []func(failed bool)
}

// add adds f; the last added runs first.
func (a *afterExit) add(f func(failed bool)) {
	a.fns = append(a.fns, f)
}

// run runs what was added, last first.
func (a *afterExit) run(failed bool) {
	for _, f := range slices.Backward(a.fns) {
		f(failed)
	}
}

// run runs cmd, writes its outcome and returns the hook's exit code for
// it, then runs what cmd left for after.
func (h *Hook) run(ctx context.Context, cmd command, in *hookapi.Input) int {
	var after afterExit
	err := cmd(ctx, h, in, &after)
	code := h.exitCode(err)
	after.run(err != nil)
	return code
}

// exitCode is the one place that maps a command's outcome to the hook's
// exit code: 0 for success; a step's own exit code (stepExitError) as it
// is, 1 outside 1..255, with nothing written (the step's output said
// why); any other error is 1, written to stderr as the hook's error line.
func (h *Hook) exitCode(err error) int {
	if err == nil {
		return 0
	}
	var step *stepExitError
	if errors.As(err, &step) {
		if step.code > 0 && step.code < 256 {
			return step.code
		}
		return 1
	}
	fmt.Fprintf(h.Stderr, "Error: tether actions: %v\n", err)
	return 1
}

// stepExitError is a step whose program ended with a non-zero exit code:
// the step failed on its own terms, and the hook exits with that code.
type stepExitError struct {
	code int
}

func (e *stepExitError) Error() string {
	return fmt.Sprintf("the step's program ended with exit code %d", e.code)
}

// stepResult is the error of a step's exit code: nil for 0, else a
// stepExitError.
func stepResult(code int) error {
	if code == 0 {
		return nil
	}
	return &stepExitError{code: code}
}

// cancelledError is a step the runner cancelled (through the hook's
// context) while it ran; detail says what became of its program.
type cancelledError struct {
	cause  error
	detail string
}

func (e *cancelledError) Error() string {
	return fmt.Sprintf("the step was cancelled (%v)%s", e.cause, e.detail)
}

func (e *cancelledError) Unwrap() error { return e.cause }

// unknownOutcomeError is a step whose end cannot be known (its connection
// could not be resumed in time, its container could not be followed): it
// counts as failed, never as success.
type unknownOutcomeError struct {
	err error
}

func (e *unknownOutcomeError) Error() string {
	return fmt.Sprintf("the step's outcome is unknown, so it failed: %v", e.err)
}

func (e *unknownOutcomeError) Unwrap() error { return e.err }

// fileCommandsError is the error of a step whose file-command files could
// not be copied back after it ended with code.
func fileCommandsError(code int, err error) error {
	return fmt.Errorf("the step ended with exit code %d, but its file commands (GITHUB_ENV, GITHUB_OUTPUT, ...) could not be copied back to the runner: %w", code, err)
}
