// Package shell is what the hook's generated scripts need of a POSIX
// shell: quoting a word, splitting the runner's arguments as sh would,
// which variable names a shell can export, and the fail function every
// script starts with. Pure: no I/O.
package shell

import (
	"errors"
	"regexp"
	"strings"
)

// Quote quotes s for a POSIX shell as one word.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CanExport says whether name is a variable name a POSIX shell can
// export.
func CanExport(name string) bool {
	return envName.MatchString(name)
}

// CanSetWithEnv says whether env(1) can set name in a program's
// environment although a shell cannot export it (see envOnlyName).
func CanSetWithEnv(name string) bool {
	return envOnlyName.MatchString(name)
}

// envName matches the variable names a POSIX shell can export.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envOnlyName matches the names a shell cannot export but env(1) can set,
// as Kubernetes accepts them in a container's env (dots and dashes:
// INPUT_FETCH-DEPTH, which @actions/core reads); none starts with a dash,
// which env would take for an option.
var envOnlyName = regexp.MustCompile(`^[A-Za-z_.][A-Za-z0-9_.-]*$`)

// FailFunc defines fail MESSAGE for the hook's scripts: the message on
// stderr, then exit 1.
const FailFunc = "fail() { printf 'tether actions: %s\\n' \"$1\" >&2; exit 1; }\n"

// SplitArgs re-joins the runner's entryPointArgs and splits them the way
// a POSIX shell splits words: the runner split its argument string on
// single spaces, so quotes arrive as literal characters inside the pieces
// (actions/runner HookInput.cs). Quotes group, backslashes escape; no
// expansion happens.
func SplitArgs(pieces []string) ([]string, error) {
	s := strings.Join(pieces, " ")
	var (
		args  []string
		cur   strings.Builder
		inArg bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '\'':
			inArg = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' (quotes must be balanced)")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inArg = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New(`unterminated " (quotes must be balanced)`)
			}
		case c == '\\' && i+1 < len(s):
			inArg = true
			i++
			cur.WriteByte(s[i])
		default:
			inArg = true
			cur.WriteByte(c)
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}
