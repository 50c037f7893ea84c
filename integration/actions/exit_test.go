package actions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tether-ci/tether/integration/actions/hookapi"
)

// A command's outcome becomes the hook's exit code in one place: a step's
// own code passes through silently (1 outside 1..255), even wrapped; any
// other error is 1 and one error line.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{stepResult(0), 0, ""},
		{stepResult(3), 3, ""},
		{stepResult(255), 255, ""},
		{stepResult(256), 1, ""},
		{stepResult(-1), 1, ""},
		{fmt.Errorf("wrapped: %w", stepResult(7)), 7, ""},
		{errors.New("boom"), 1, "Error: tether actions: boom\n"},
		{&cancelledError{cause: context.Canceled, detail: ": its script was stopped and ended with exit code 143"}, 1,
			"Error: tether actions: the step was cancelled (context canceled): its script was stopped and ended with exit code 143\n"},
		{&unknownOutcomeError{err: errors.New("gone")}, 1, "Error: tether actions: the step's outcome is unknown, so it failed: gone\n"},
	} {
		var stderr bytes.Buffer
		h := &Hook{Stderr: &stderr}
		if code := h.exitCode(tc.err); code != tc.code || stderr.String() != tc.stderr {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.err, code, stderr.String(), tc.code, tc.stderr)
		}
	}
}

// What a command leaves for after its outcome runs once the error line is
// written, last added first, knowing whether the command failed.
func TestRunAfterExit(t *testing.T) {
	for _, fail := range []bool{false, true} {
		var stderr bytes.Buffer
		h := &Hook{Stderr: &stderr}
		cmd := func(_ context.Context, h *Hook, _ *hookapi.Input, after *afterExit) error {
			after.add(func(failed bool) { h.warn("first added, failed=%v", failed) })
			after.add(func(failed bool) { h.warn("second added, failed=%v", failed) })
			if fail {
				return errors.New("it failed")
			}
			return nil
		}
		code := h.run(context.Background(), cmd, &hookapi.Input{})
		want := fmt.Sprintf("Warning: tether actions: second added, failed=%[1]v\nWarning: tether actions: first added, failed=%[1]v\n", fail)
		if fail {
			want = "Error: tether actions: it failed\n" + want
		}
		if (code != 0) != fail || stderr.String() != want {
			t.Errorf("fail=%v: exit %d, stderr %q, want %q", fail, code, stderr.String(), want)
		}
	}
}
