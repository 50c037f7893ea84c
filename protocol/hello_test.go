package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A hello with command aliases round-trips through Parse; one without the
// field (an older shim's) still decodes, with no aliases to report.
func TestHelloCommandAliases(t *testing.T) {
	want := []CommandAlias{
		{Name: "gitlab-runner", Target: "gitlab-runner-helper", Path: "/usr/bin/gitlab-runner-helper", Linked: true},
		{Name: "tool", Target: "other", Path: "/bin/tool"},
		{Name: "absent", Target: "also-absent"},
		{Name: "unlinkable", Target: "t", Error: "symlink: read-only file system"},
	}
	line, err := NewEncoder().AppendJSON(nil, TypeHello, Hello{Protocol: Version, Shim: "v1", CommandAliases: want})
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := Parse(line, nil)
	if err != nil {
		t.Fatal(err)
	}
	var h Hello
	if err := json.Unmarshal(rec.Payload, &h); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h.CommandAliases, want) {
		t.Fatalf("aliases decoded as %+v, want %+v", h.CommandAliases, want)
	}
	for i, missing := range []bool{false, false, true, true} {
		if h.CommandAliases[i].Missing() != missing {
			t.Errorf("alias %s: Missing() = %v, want %v", h.CommandAliases[i].Name, !missing, missing)
		}
	}

	old := []byte(`h 0 {"protocol":2,"shim":"v0.9.0","max_record":16384,"pid":1,"shell":"/bin/sh","tty":false,"replay":"file"}` + "\n")
	rec, _, err = Parse(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	h = Hello{}
	if err := json.Unmarshal(rec.Payload, &h); err != nil {
		t.Fatalf("a hello without command_aliases: %v", err)
	}
	if h.CommandAliases != nil || h.Shim != "v0.9.0" {
		t.Fatalf("a hello without command_aliases decoded as %+v", h)
	}
	// Without aliases the encoder leaves the field out.
	line, _ = NewEncoder().AppendJSON(nil, TypeHello, Hello{Protocol: Version})
	if got := string(line); strings.Contains(got, "command_aliases") {
		t.Fatalf("a hello without aliases encodes the field: %s", got)
	}
}
