package cmdutil

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/client"
)

// OutputLimit is the --output-limit flag of `tether run` and `tether
// attach`: a size in bytes (0 = no limit).
type OutputLimit struct{ bytes int64 }

// Register adds --output-limit to fs.
func (o *OutputLimit) Register(fs *pflag.FlagSet) {
	fs.Var(o, "output-limit", "write at most `SIZE` of the job's output (e.g. 1MiB, 500k, 2GB; 0 = no limit): the rest is dropped with one notice saying how much, and the job runs on to its own exit code")
}

// String returns the limit as given.
func (o *OutputLimit) String() string { return strconv.FormatInt(o.bytes, 10) }

// Type names the value for the help text.
func (o *OutputLimit) Type() string { return "SIZE" }

// Set parses a size: a number with an optional unit (B; k/K/KB, M/MB, G/GB
// in powers of 1000; KiB, MiB, GiB in powers of 1024).
func (o *OutputLimit) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	o.bytes = n
	return nil
}

// parseSize parses a byte size such as 1MiB, 500k or 20000.
func parseSize(v string) (int64, error) {
	s := strings.TrimSpace(v)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" || f < 0 {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit (B, k, KB, KiB, M, MB, MiB, G, GB, GiB)", v)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1e3, "kb": 1e3, "kib": 1 << 10,
		"m": 1e6, "mb": 1e6, "mib": 1 << 20,
		"g": 1e9, "gb": 1e9, "gib": 1 << 30,
	}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q (B, k, KB, KiB, M, MB, MiB, G, GB, GiB)", v, unit)
	}
	return int64(f * mult), nil
}

// apply sets the client option.
func (o *OutputLimit) Apply(opts *client.Options) { opts.OutputLimit = o.bytes }
