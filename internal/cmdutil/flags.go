package cmdutil

import (
	"io"

	"github.com/spf13/pflag"
)

// NewFlagSet returns an empty FlagSet for a subcommand: errors are
// returned, never printed; --help is the caller's to print.
func NewFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = true
	return fs
}

// boolValue is a custom flag value that may stand alone ("--flag" means
// "--flag=true").
type boolValue interface{ IsBoolFlag() bool }

// MarkBoolValues lets fs's custom boolValue flags stand alone.
func MarkBoolValues(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if b, ok := f.Value.(boolValue); ok && b.IsBoolFlag() && f.NoOptDefVal == "" {
			f.NoOptDefVal = "true"
		}
	})
}

// ParseArgs parses fs's flags from args, flags and positional arguments in
// any order ("run a.sh --after b.sh"); "--" ends the flags. It returns the
// positional arguments.
func ParseArgs(fs *pflag.FlagSet, args []string) ([]string, error) {
	MarkBoolValues(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}
