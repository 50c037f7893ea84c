package protocol

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseCommandPlainPathsAreVerbatim(t *testing.T) {
	for _, path := range []string{
		"/builds/step.sh",
		"/scripts/with space.sh",
		" leading and trailing spaces ",
		`/s/"double" and 'single' quotes`,
		"/s/a;b && c || d | e",
		"/s/$(rm -rf /) `id` ${HOME} $HOME",
		"/s/*.sh ? [a-z] ~user",
		"/s/back\\slash",
		"/s/tab\there",
		"/s/cr\rinside",
		"relative/path.sh",
		"-dash-first",
		"/s/ünïcödé ✓ 😀",
		"/s/invalid \xff\xfe utf-8",
		"/s/nul\x00byte",
		"} not an object",
		"[1,2,3]",
		`"quoted"`,
		"#comment-like",
	} {
		c, err := ParseCommand([]byte(path))
		if err != nil {
			t.Errorf("ParseCommand(%q): %v", path, err)
			continue
		}
		if c.Cmd != CmdRun || c.Script != path {
			t.Errorf("ParseCommand(%q) = %+v, want run of the path unchanged", path, c)
		}
		if !reflect.DeepEqual(c, Command{Cmd: CmdRun, Script: path}) {
			t.Errorf("ParseCommand(%q) set other fields: %+v", path, c)
		}
	}
}

func TestParseCommandCRLF(t *testing.T) {
	for in, want := range map[string]string{
		"/p\r":    "/p",
		"/p\r\r":  "/p\r", // only the CR of a CR LF is dropped
		"/p \r":   "/p ",
		"/a\rb\r": "/a\rb",
	} {
		c, err := ParseCommand([]byte(in))
		if err != nil || c.Script != want {
			t.Errorf("ParseCommand(%q) = %q, %v; want %q", in, c.Script, err, want)
		}
	}
	c, err := ParseCommand([]byte(`{"cmd":"exit"}` + "\r"))
	if err != nil || c.Cmd != CmdExit {
		t.Errorf("JSON command with CR LF: %+v, %v", c, err)
	}
}

func TestParseCommandJSON(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Command
	}{
		{`{"cmd":"run","script":"/a b.sh"}`, Command{Cmd: CmdRun, Script: "/a b.sh"}},
		{`{"cmd":"run","script":"{starts with a brace"}`, Command{Cmd: CmdRun, Script: "{starts with a brace"}},
		{`{"cmd":"run","script":"/p\n\u0018\r"}`, Command{Cmd: CmdRun, Script: "/p\n\x18\r"}},
		{`{"cmd":"job","id":"J1","scripts":["/1","/2"],"after":["/a"]}`, Command{Cmd: CmdJob, ID: "J1", Scripts: []string{"/1", "/2"}, After: []string{"/a"}}},
		{`{"cmd":"job","id":"J2","after":["/a"]}`, Command{Cmd: CmdJob, ID: "J2", After: []string{"/a"}}},
		{`{"cmd":"job","id":"J3","argv":["sh","-c","echo \"$0\"",""]}`, Command{Cmd: CmdJob, ID: "J3", Argv: []string{"sh", "-c", `echo "$0"`, ""}}},
		{`{"cmd":"job","id":"J4","argv":["/entry"],"after":["/a"]}`, Command{Cmd: CmdJob, ID: "J4", Argv: []string{"/entry"}, After: []string{"/a"}}},
		{`{"cmd":"cancel"}`, Command{Cmd: CmdCancel}},
		{`{"cmd":"cancel","grace_ms":2500}`, Command{Cmd: CmdCancel, GraceMS: 2500}},
		{`{"cmd":"ping","nonce":"n-1"}`, Command{Cmd: CmdPing, Nonce: "n-1"}},
		{`{"cmd":"resume","from":0,"nonce":"r"}`, Command{Cmd: CmdResume, Nonce: "r"}},
		{`{"cmd":"resume","from":123456789012,"nonce":"r"}`, Command{Cmd: CmdResume, From: 123456789012, Nonce: "r"}},
		{`{"cmd":"exit"}`, Command{Cmd: CmdExit}},
		{` {"cmd":"exit"}`, Command{Cmd: CmdRun, Script: ` {"cmd":"exit"}`}}, // not JSON: does not start with '{'
		{`{ "cmd" : "exit" } `, Command{Cmd: CmdExit}},
		{`{"cmd":"exit","future_field":[1,{"x":2}]}`, Command{Cmd: CmdExit}}, // unknown fields are ignored
	} {
		c, err := ParseCommand([]byte(tc.line))
		if err != nil {
			t.Errorf("ParseCommand(%s): %v", tc.line, err)
			continue
		}
		if !reflect.DeepEqual(c, tc.want) {
			t.Errorf("ParseCommand(%s) = %+v, want %+v", tc.line, c, tc.want)
		}
	}
}

func TestParseCommandRejects(t *testing.T) {
	for _, tc := range []struct{ line, wantErr string }{
		{"", "empty"},
		{"\r", "empty"},
		{`{`, "JSON"},
		{`{"cmd":"exit"`, "JSON"},
		{`{"cmd":"exit"} x`, "JSON"},
		{`{"cmd":"exit"}}`, "JSON"},
		{`{"cmd":"exit"}]`, "JSON"},
		{`{"cmd":"exit"}{"cmd":"exit"}`, "JSON"},
		{`{"cmd":1}`, "JSON"},
		{`{"cmd":"resume","from":1.5}`, "JSON"},
		{`{"cmd":"job","scripts":"/one"}`, "JSON"},
		{`{}`, `no "cmd"`},
		{`{"script":"/x"}`, `no "cmd"`},
		{`{"cmd":"reboot"}`, "unknown command"},
		{`{"cmd":"run"}`, `needs a "script"`},
		{`{"cmd":"run","script":""}`, `needs a "script"`},
		{`{"cmd":"job","id":"j"}`, `needs "scripts", "argv" or "after"`},
		{`{"cmd":"job","scripts":[]}`, `needs "scripts", "argv" or "after"`},
		{`{"cmd":"job","scripts":["/a",""]}`, "empty script path"},
		{`{"cmd":"job","argv":["sh"],"scripts":["/a"]}`, `both "argv" and "scripts"`},
		{`{"cmd":"job","argv":["","x"]}`, "empty program name"},
		{`{"cmd":"job","argv":[],"after":[""]}`, "empty script path"},
		{`{"cmd":"job","after":[""]}`, "empty script path"},
		{`{"cmd":"resume","from":-1}`, "negative"},
		{`{"cmd":"cancel","grace_ms":-5}`, "negative"},
	} {
		c, err := ParseCommand([]byte(tc.line))
		if err == nil {
			t.Errorf("ParseCommand(%q) accepted %+v", tc.line, c)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseCommand(%q) error %q, want it to mention %q", tc.line, err, tc.wantErr)
		}
	}
}

// cmdStep is one expected result of CommandReader.Next.
type cmdStep struct {
	cmd   Command // when err is ""
	err   string  // substring of a *CommandError's message
	input string  // the CommandError's Input, when err is set and input is not ""
	eof   bool
}

func expectCommands(t *testing.T, r *CommandReader, steps []cmdStep) {
	t.Helper()
	for i, want := range steps {
		c, err := r.Next()
		switch {
		case want.eof:
			if !errors.Is(err, io.EOF) {
				t.Fatalf("step %d: got %+v, %v; want io.EOF", i, c, err)
			}
		case want.err != "":
			var ce *CommandError
			if !errors.As(err, &ce) {
				t.Fatalf("step %d: got %+v, %v; want a *CommandError about %q", i, c, err, want.err)
			}
			if !strings.Contains(ce.Error(), want.err) {
				t.Fatalf("step %d: error %q, want it to mention %q", i, ce, want.err)
			}
			if want.input != "" && ce.Input != want.input {
				t.Fatalf("step %d: error input %q, want %q", i, ce.Input, want.input)
			}
		default:
			if err != nil {
				t.Fatalf("step %d: %v; want %+v", i, err, want.cmd)
			}
			if !reflect.DeepEqual(c, want.cmd) {
				t.Fatalf("step %d: got %+v, want %+v", i, c, want.cmd)
			}
		}
	}
}

func run(path string) cmdStep { return cmdStep{cmd: Command{Cmd: CmdRun, Script: path}} }

const can = "\x18"

func TestCommandReader(t *testing.T) {
	long := strings.Repeat("x", MaxCommand)
	for _, tc := range []struct {
		name  string
		input string
		steps []cmdStep
	}{
		{"plain lines", "/a\n/b c\n", []cmdStep{run("/a"), run("/b c"), {eof: true}}},
		{"reset prefixed", can + "/a\n" + can + `{"cmd":"exit"}` + "\n", []cmdStep{run("/a"), {cmd: Command{Cmd: CmdExit}}, {eof: true}}},
		{"CR LF", "/a\r\n" + can + `{"cmd":"ping","nonce":"n"}` + "\r\n", []cmdStep{run("/a"), {cmd: Command{Cmd: CmdPing, Nonce: "n"}}, {eof: true}}},
		{"blank lines skipped", "\n\r\n   \n\t\n" + can + "\n" + can + "  \n/a\n\n", []cmdStep{run("/a"), {eof: true}}},
		{"empty input", "", []cmdStep{{eof: true}, {eof: true}}},
		{"torn line discarded, next command kept", "/half-writ" + can + "/b\n/c\n",
			[]cmdStep{{err: "torn", input: "/half-writ"}, run("/b"), run("/c"), {eof: true}}},
		{"torn JSON discarded", `{"cmd":"job","id":"j","scri` + can + `{"cmd":"job","id":"j","scripts":["/x"]}` + "\n",
			[]cmdStep{{err: "torn", input: `{"cmd":"job","id":"j","scri`}, {cmd: Command{Cmd: CmdJob, ID: "j", Scripts: []string{"/x"}}}, {eof: true}}},
		{"torn line before reset of a blank line", "/half" + can + "\n/next\n",
			[]cmdStep{{err: "torn", input: "/half"}, run("/next"), {eof: true}}},
		{"several resets: the last one wins", can + "/a" + can + "/b" + can + "/c\n",
			[]cmdStep{{err: "torn", input: "/a" + can + "/b"}, run("/c"), {eof: true}}},
		{"blank text before reset is not torn", "  " + can + "/a\n", []cmdStep{run("/a"), {eof: true}}},
		{"repeated resets are not torn", can + can + "/a\n" + can + " " + can + "\t" + can + "/b\n", []cmdStep{run("/a"), run("/b"), {eof: true}}},
		{"torn line at EOF", "/a\n" + can + "/half",
			[]cmdStep{run("/a"), {err: "without a newline", input: "/half"}, {eof: true}, {eof: true}}},
		{"torn text and reset at EOF", "/a\n/half" + can,
			[]cmdStep{run("/a"), {err: "torn", input: "/half"}, {eof: true}}},
		{"blank text at EOF", "/a\n" + can + "  ", []cmdStep{run("/a"), {eof: true}}},
		{"invalid command then more", can + `{"cmd":"nope"}` + "\n" + can + "{bad json\n/ok\n",
			[]cmdStep{{err: "unknown command", input: `{"cmd":"nope"}`}, {err: "JSON", input: "{bad json"}, run("/ok"), {eof: true}}},
		{"longest command", can + long + "\n/next\n", []cmdStep{run(long), run("/next"), {eof: true}}},
		{"longest command with CR LF", can + long[1:] + "\r\n", []cmdStep{run(long[1:]), {eof: true}}},
		{"too long", can + long + "y\n/next\n", []cmdStep{{err: "longer than"}, run("/next"), {eof: true}}},
		{"far too long", strings.Repeat("z", 5*MaxCommand) + "\n/next\n", []cmdStep{{err: "longer than", input: strings.Repeat("z", 64)}, run("/next"), {eof: true}}},
		{"too long at EOF", strings.Repeat("z", 2*MaxCommand), []cmdStep{{err: "without a newline"}, {eof: true}}},
		// A client died in the middle of a long command; the next client's
		// command must not be lost because the two together are too long.
		{"long torn line then a command", strings.Repeat("t", MaxCommand-10) + can + `{"cmd":"job","id":"j2","scripts":["/a","/b"]}` + "\n",
			[]cmdStep{{err: "torn"}, {cmd: Command{Cmd: CmdJob, ID: "j2", Scripts: []string{"/a", "/b"}}}, {eof: true}}},
		{"over-long torn line then a command", strings.Repeat("t", 3*MaxCommand) + can + "/next\n",
			[]cmdStep{{err: "torn", input: strings.Repeat("t", 200) + "..."}, run("/next"), {eof: true}}},
		{"torn line then an over-long command", "/half" + can + long + "y\n/next\n",
			[]cmdStep{{err: "torn", input: "/half"}, {err: "longer than"}, run("/next"), {eof: true}}},
		{"torn line then a bad command", "/half" + can + "{\n",
			[]cmdStep{{err: "torn", input: "/half"}, {err: "JSON"}, {eof: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectCommands(t, NewCommandReader(strings.NewReader(tc.input)), tc.steps)
			expectCommands(t, NewCommandReader(iotest.OneByteReader(strings.NewReader(tc.input))), tc.steps)
			expectCommands(t, NewCommandReader(iotest.DataErrReader(strings.NewReader(tc.input))), tc.steps)
		})
	}
}

func TestCommandReaderReadError(t *testing.T) {
	boom := errors.New("stdin broke")
	r := NewCommandReader(&reads{chunks: []string{"/a\n/b"}, err: boom})
	if c, err := r.Next(); err != nil || c.Script != "/a" {
		t.Fatalf("first command: %+v, %v", c, err)
	}
	_, err := r.Next()
	var ce *CommandError
	if !errors.Is(err, boom) || errors.As(err, &ce) {
		t.Fatalf("read error: got %v, want the reader's error (not a *CommandError)", err)
	}
}

func TestCommandErrorUnwraps(t *testing.T) {
	_, err := NewCommandReader(strings.NewReader("{\n")).Next()
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Input != "{" || errors.Unwrap(ce) == nil || ce.Error() != errors.Unwrap(ce).Error() {
		t.Fatalf("CommandError: %#v", err)
	}
}

// roundTripCommands sends cmds with AppendCommand and reads them back.
func roundTripCommands(t *testing.T, cmds []Command) {
	t.Helper()
	var wire []byte
	for _, c := range cmds {
		var err error
		wire, err = AppendCommand(wire, c)
		if err != nil {
			t.Fatalf("AppendCommand(%+v): %v", c, err)
		}
	}
	if bytes.Count(wire, []byte{'\n'}) != len(cmds) || bytes.Count(wire, []byte{Reset}) != len(cmds) {
		t.Fatalf("wire form %q is not one Reset-prefixed line per command", wire)
	}
	r := NewCommandReader(bytes.NewReader(wire))
	for _, want := range cmds {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("reading back %+v: %v (wire %q)", want, err, wire)
		}
		if !commandsEqual(got, want) {
			t.Fatalf("sent %+v, read back %+v (wire %q)", want, got, wire)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the commands: %v", err)
	}
}

// commandsEqual compares commands, treating nil and empty lists alike
// (omitempty drops an empty list).
func commandsEqual(a, b Command) bool {
	if len(a.Scripts) == 0 && len(b.Scripts) == 0 {
		a.Scripts, b.Scripts = nil, nil
	}
	if len(a.After) == 0 && len(b.After) == 0 {
		a.After, b.After = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func TestAppendCommandRoundTrip(t *testing.T) {
	paths := []string{
		"/builds/step.sh", "with space", `"q" 'q'`, "a;b", "$(id)", "  padded  ",
		"/s/\xff\xfe invalid", "{brace first", "new\nline", "reset\x18inside",
		"ends in CR\r", "cr\rinside", " ", "\t", "\u00a0", "\u2028", "/ünï ✓",
		"/nul\x00", "}", "[", `\`,
	}
	var cmds []Command
	for _, p := range paths {
		cmds = append(cmds, Command{Cmd: CmdRun, Script: p})
	}
	cmds = append(cmds,
		Command{Cmd: CmdRun, Script: "/with-id", ID: "x"},
		Command{Cmd: CmdRun, Script: "/with-nonce", Nonce: "n"},
		Command{Cmd: CmdRun, Script: "/with-from", From: 3},
		Command{Cmd: CmdRun, Script: "/with-grace", GraceMS: 9},
		Command{Cmd: CmdRun, Script: "/with-scripts", Scripts: []string{"/other"}},
		Command{Cmd: CmdJob, ID: "J1", Scripts: []string{"/a b", "{x", "new\nline"}, After: []string{"/after"}},
		Command{Cmd: CmdJob, Scripts: []string{"/only"}},
		Command{Cmd: CmdJob, ID: "J2", After: []string{"/after-only"}},
		Command{Cmd: CmdCancel},
		Command{Cmd: CmdCancel, GraceMS: 1500},
		Command{Cmd: CmdPing, Nonce: "9f8e"},
		Command{Cmd: CmdPing},
		Command{Cmd: CmdResume, From: 0, Nonce: "r1"},
		Command{Cmd: CmdResume, From: 1 << 50, Nonce: "r2"},
		Command{Cmd: CmdExit},
	)
	roundTripCommands(t, cmds)
}

func TestAppendCommandWireForm(t *testing.T) {
	for _, tc := range []struct {
		cmd  Command
		want string
	}{
		{Command{Cmd: CmdRun, Script: "/builds/a b.sh"}, can + "/builds/a b.sh\n"},
		{Command{Cmd: CmdRun, Script: "{x"}, can + `{"cmd":"run","script":"{x"}` + "\n"},
		{Command{Cmd: CmdRun, Script: " "}, can + `{"cmd":"run","script":" "}` + "\n"},
		{Command{Cmd: CmdJob, ID: "j", Scripts: []string{"/1"}, After: []string{"/2"}}, can + `{"cmd":"job","id":"j","scripts":["/1"],"after":["/2"]}` + "\n"},
		{Command{Cmd: CmdCancel, GraceMS: 100}, can + `{"cmd":"cancel","grace_ms":100}` + "\n"},
		{Command{Cmd: CmdPing, Nonce: "n"}, can + `{"cmd":"ping","nonce":"n"}` + "\n"},
		{Command{Cmd: CmdResume, From: 42, Nonce: "n"}, can + `{"cmd":"resume","nonce":"n","from":42}` + "\n"},
		{Command{Cmd: CmdResume, Nonce: "n"}, can + `{"cmd":"resume","nonce":"n"}` + "\n"},
		{Command{Cmd: CmdExit}, can + `{"cmd":"exit"}` + "\n"},
	} {
		got, err := AppendCommand([]byte("k"), tc.cmd)
		if err != nil || string(got) != "k"+tc.want {
			t.Errorf("AppendCommand(%+v) = %q, %v; want %q", tc.cmd, got, err, "k"+tc.want)
		}
	}
}

func TestAppendCommandRejects(t *testing.T) {
	for _, c := range []Command{
		{},
		{Cmd: "reboot"},
		{Cmd: CmdRun},
		{Cmd: CmdJob},
		{Cmd: CmdJob, Scripts: []string{""}},
		{Cmd: CmdResume, From: -1},
		{Cmd: CmdCancel, GraceMS: -1},
		// Bytes that are not UTF-8 can only travel in a plain path.
		{Cmd: CmdRun, Script: "{\xff"},
		{Cmd: CmdRun, Script: "/a\xff\r"},
		{Cmd: CmdRun, Script: "/a\xff", ID: "j"},
		{Cmd: CmdJob, Scripts: []string{"/ok", "/bad\xff"}},
		{Cmd: CmdJob, After: []string{"/bad\xff"}},
		{Cmd: CmdPing, Nonce: "\xff"},
	} {
		got, err := AppendCommand([]byte("k"), c)
		if err == nil || string(got) != "k" {
			t.Errorf("AppendCommand(%+v) = %q, %v; want an error and dst unchanged", c, got, err)
		}
	}
}
