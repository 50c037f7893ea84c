package runcmd

import (
	"slices"
	"testing"
	"time"

	"github.com/tether-ci/tether/client"
	"github.com/tether-ci/tether/protocol"
)

// attrsMap turns jobAttrs' key/value list into a map.
func attrsMap(t *testing.T, attrs []any) map[string]any {
	t.Helper()
	m := map[string]any{}
	for i := 0; i+1 < len(attrs); i += 2 {
		m[attrs[i].(string)] = attrs[i+1]
	}
	return m
}

// The job summary names the script that began without a status (the shim
// or its container died while it ran) interrupted, not skipped; skipped
// are only the main scripts that never began.
func TestJobAttrsInterruptedScript(t *testing.T) {
	job := client.Job{Scripts: []string{"/s/a.sh", "/s/b.sh", "/s/c.sh"}, After: []string{"/s/after.sh"}}
	done := func(scripts ...string) client.Result {
		var r client.Result
		for _, s := range scripts {
			r.Statuses = append(r.Statuses, protocol.Status{Script: s})
		}
		return r
	}
	for _, tc := range []struct {
		name                 string
		res                  client.Result
		begun                []string
		interrupted, skipped []string
	}{
		{"died in the second script", done("/s/a.sh"), []string{"/s/a.sh", "/s/b.sh"}, []string{"/s/b.sh"}, []string{"/s/c.sh"}},
		{"died in the first script", done(), []string{"/s/a.sh"}, []string{"/s/a.sh"}, []string{"/s/b.sh", "/s/c.sh"}},
		{"died in the after-script", done("/s/a.sh", "/s/b.sh", "/s/c.sh"), []string{"/s/a.sh", "/s/b.sh", "/s/c.sh", "/s/after.sh"}, []string{"/s/after.sh"}, nil},
		{"failed, then the after-script", done("/s/a.sh", "/s/after.sh"), []string{"/s/a.sh", "/s/after.sh"}, nil, []string{"/s/b.sh", "/s/c.sh"}},
		{"all ran", done("/s/a.sh", "/s/b.sh", "/s/c.sh", "/s/after.sh"), []string{"/s/a.sh", "/s/b.sh", "/s/c.sh", "/s/after.sh"}, nil, nil},
		{"died before any script", done(), nil, nil, []string{"/s/a.sh", "/s/b.sh", "/s/c.sh"}},
	} {
		m := attrsMap(t, jobAttrs(job, time.Now(), tc.res, tc.begun))
		got := func(key string) []string {
			v, _ := m[key].([]string)
			return v
		}
		if !slices.Equal(got("interrupted"), tc.interrupted) || !slices.Equal(got("skipped"), tc.skipped) {
			t.Errorf("%s: interrupted=%v skipped=%v; want interrupted=%v skipped=%v", tc.name, m["interrupted"], m["skipped"], tc.interrupted, tc.skipped)
		}
		if _, ok := m["duration"].(time.Duration); !ok {
			t.Errorf("%s: no duration in %v", tc.name, m)
		}
	}
}

// scriptsBegun records the begins in order and passes every event on.
func TestScriptsBegunRecordsBegins(t *testing.T) {
	var b scriptsBegun
	var seen []client.EventKind
	f := b.events(func(ev client.Event) { seen = append(seen, ev.Kind) })
	for _, ev := range []client.Event{
		{Kind: client.EventConnected, Attempt: 1},
		{Kind: client.EventScriptBegin, Script: "/a"},
		{Kind: client.EventScriptStatus, Script: "/a"},
		{Kind: client.EventScriptBegin, Script: "/b"},
	} {
		f(ev)
	}
	if got := b.list(); !slices.Equal(got, []string{"/a", "/b"}) || len(seen) != 4 {
		t.Fatalf("begun %v, events passed on %v", got, seen)
	}
}
