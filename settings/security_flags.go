package settings

import (
	"fmt"
	"math"
	"strconv"
)

// uidValue is the --run-as-user flag: a user ID into *p.
type uidValue struct{ p **int64 }

// String returns the UID, or "" when the flag was not given.
func (u *uidValue) String() string {
	if u == nil || u.p == nil || *u.p == nil {
		return ""
	}
	return strconv.FormatInt(**u.p, 10)
}

// Type names the value in the help text.
func (u *uidValue) Type() string { return "UID" }

// Set parses a numeric user ID, 0 to 2147483647 as Kubernetes accepts.
func (u *uidValue) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return fmt.Errorf("%q is not a user ID: want a number from 0 to %d", v, math.MaxInt32)
	}
	*u.p = &n
	return nil
}

// optionalBool is a boolean flag into *p that stays nil until given, so
// an explicit --read-only-root=false can override --restricted's default.
type optionalBool struct{ p **bool }

// String returns "true" or "false" once given, else "".
func (b *optionalBool) String() string {
	if b == nil || b.p == nil || *b.p == nil {
		return ""
	}
	return strconv.FormatBool(**b.p)
}

// Set parses a boolean ("--read-only-root" alone means true).
func (b *optionalBool) Set(v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%q is not true or false", v)
	}
	*b.p = &x
	return nil
}

// Type names the value in the help text.
func (b *optionalBool) Type() string { return "bool" }

// IsBoolFlag lets the flag be given without a value.
func (b *optionalBool) IsBoolFlag() bool { return true }
