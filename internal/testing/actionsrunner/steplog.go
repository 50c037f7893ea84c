package actionsrunner

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// StepLog is a step's log as the runner records a hook's output: the
// lines it shows, after the workflow commands and the secret masks. It
// follows actions/runner's source:
//   - src/Runner.Sdk/ProcessInvoker.cs (StartReadStream): each stream is
//     read with StreamReader.ReadLine, so "\n", "\r\n" and a lone "\r"
//     end a line, a last line without one is still delivered, and invalid
//     UTF-8 becomes U+FFFD;
//   - src/Runner.Worker/Handlers/OutputManager.cs and ActionCommandManager.cs:
//     a line starting (after leading spaces) with "::name::" or "::name
//     props::" of a known command is consumed, not shown: add-mask
//     registers a secret (and each of its lines), debug is hidden (step
//     debug off), error/warning/notice become "##[error]" etc., group and
//     endgroup "##[group]"/"##[endgroup]"; stop-commands::TOKEN stops
//     command processing until a "::TOKEN::" line (which is shown);
//   - src/Runner.Common/ActionCommand.cs (UnescapeData): %0D, %0A and %25
//     in a command's data;
//   - the secret masker: every secret in a shown line becomes "***".
//
// The masks are the job's (they outlive the step); a StepLog is used for
// one job, one stream at a time.
type StepLog struct {
	// Lines are the lines the runner shows, in order.
	Lines []string
	// Secrets are the values masked from now on.
	Secrets []string

	stopToken string
}

// commands are the runner's registered workflow commands
// (ActionCommandManager.cs extensions) the log knows.
var commands = map[string]bool{
	"add-mask": true, "debug": true, "error": true, "warning": true, "notice": true,
	"group": true, "endgroup": true, "echo": true, "add-matcher": true, "remove-matcher": true,
	"set-output": true, "save-state": true, "set-env": true, "add-path": true, stopCommands: true,
}

const stopCommands = "stop-commands"

// Add appends what one stream of the hook wrote.
func (l *StepLog) Add(out []byte) {
	for _, line := range readLines(out) {
		l.addLine(line)
	}
}

// Text is the shown lines, each ended by "\n".
func (l *StepLog) Text() string {
	var b strings.Builder
	for _, line := range l.Lines {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// readLines splits out as StreamReader.ReadLine does, decoding UTF-8 with
// U+FFFD for invalid bytes.
func readLines(out []byte) []string {
	var lines []string
	for len(out) > 0 {
		i := bytes.IndexAny(out, "\r\n")
		if i < 0 {
			lines = append(lines, decode(out))
			break
		}
		lines = append(lines, decode(out[:i]))
		if out[i] == '\r' && i+1 < len(out) && out[i+1] == '\n' {
			i++
		}
		out = out[i+1:]
	}
	return lines
}

// decode turns b into a string, each byte that does not start a valid
// UTF-8 sequence one U+FFFD (.NET's decoder replaces a truncated sequence
// once where this replaces each of its bytes).
func decode(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		s.WriteRune(r)
		b = b[n:]
	}
	return s.String()
}

// addLine processes one line as OutputManager.OnDataReceived does.
func (l *StepLog) addLine(line string) {
	name, data, ok := parseCommand(line)
	if l.stopToken != "" {
		if ok && name == l.stopToken {
			l.stopToken = ""
			l.show(line)
			return
		}
		l.show(line)
		return
	}
	if !ok || !commands[name] {
		l.show(line)
		return
	}
	switch name {
	case "add-mask":
		if strings.TrimSpace(data) == "" {
			l.show("##[warning]Can't add secret mask for empty string in ##[add-mask] command.")
			return
		}
		l.Secrets = append(l.Secrets, data)
		for _, part := range strings.FieldsFunc(data, func(r rune) bool { return r == '\r' || r == '\n' }) {
			if part = strings.TrimSpace(part); part != "" {
				l.Secrets = append(l.Secrets, part)
			}
		}
	case "error", "warning", "notice", "group", "endgroup":
		l.show("##[" + name + "]" + data)
	case stopCommands:
		l.stopToken = data
	}
}

// show appends line with the secrets masked.
func (l *StepLog) show(line string) {
	for _, s := range l.Secrets {
		line = strings.ReplaceAll(line, s, "***")
	}
	l.Lines = append(l.Lines, line)
}

// parseCommand parses "::name[ props]::data" (ActionCommand.TryParseV2).
func parseCommand(line string) (name, data string, ok bool) {
	const key = "::"
	msg := strings.TrimLeftFunc(line, unicode.IsSpace)
	if !strings.HasPrefix(msg, key) {
		return "", "", false
	}
	end := strings.Index(msg[len(key):], key)
	if end < 0 {
		return "", "", false
	}
	info := msg[len(key) : len(key)+end]
	name, _, _ = strings.Cut(info, " ")
	data = msg[len(key)+end+len(key):]
	data = strings.NewReplacer("%0D", "\r", "%0A", "\n", "%25", "%").Replace(data)
	return name, data, true
}
