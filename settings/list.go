package settings

import "strings"

// StringList is a repeatable string flag: each --flag VALUE appends one
// value, in order. In a config file it is a list (or, for K=V flags, a
// map).
type StringList []string

// String returns the values joined by commas.
func (s *StringList) String() string { return strings.Join(*s, ",") }

// Type names the value in the help text.
func (s *StringList) Type() string { return "VALUE" }

// Set appends v.
func (s *StringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}
