package actionsrunner

import (
	"reflect"
	"testing"
)

// runs.args are quoted one by one (inner quotes escaped, an empty one
// kept as "") and the string split on single spaces, as the runner does.
func TestContainerArgs(t *testing.T) {
	got := containerArgs([]string{"hello there", `say "hi"`, ""})
	want := []string{`"hello`, `there"`, `"say`, `\"hi\""`, `""`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := containerArgs(nil); len(got) != 0 || got == nil {
		t.Fatalf("no args: %q (want an empty list, never null)", got)
	}
}
