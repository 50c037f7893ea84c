package cmdutil

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// LogFlags are the logging flags every subcommand shares.
type LogFlags struct {
	// Quiet silences progress; only errors are logged.
	Quiet bool
	// Verbose adds debug lines, client-go's included.
	Verbose bool
	// Format is "text" or "json".
	Format string
	// FullTime keeps the date in text records (a log file), where the
	// terminal's records show the time of day alone.
	FullTime bool
}

// Register adds -q/--quiet, -v/--verbose and --log-format to fs.
func (l *LogFlags) Register(fs *pflag.FlagSet) {
	fs.BoolVarP(&l.Quiet, "quiet", "q", false, "log only errors to stderr (no progress, no summary)")
	fs.BoolVarP(&l.Verbose, "verbose", "v", false, "also log debug lines to stderr, client-go's requests and retries included")
	fs.StringVar(&l.Format, "log-format", "text", "stderr log `FORMAT`: text or json")
}

// Logger returns the logger the flags select, writing to w.
func (l *LogFlags) Logger(w io.Writer) (*slog.Logger, error) {
	level := slog.LevelInfo
	switch {
	case l.Quiet && l.Verbose:
		return nil, errors.New("--quiet and --verbose exclude each other")
	case l.Quiet:
		level = slog.LevelError
	case l.Verbose:
		level = slog.LevelDebug
		// client-go logs its requests and retries at klog V(4..6); RouteKlog
		// sends them to this logger's debug level.
		kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(kfs)
		if err := kfs.Set("v", "6"); err != nil {
			return nil, fmt.Errorf("raise client-go's log verbosity: %w", err)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.Format {
	case "text", "":
		if l.FullTime {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		// A short local time: the lines sit between the job's output.
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
				a.Value = slog.StringValue(a.Value.Time().Format("15:04:05.000"))
			}
			return a
		}
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		opts.ReplaceAttr = JSONAttr
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", l.Format)
}

// JSONAttr renders durations as numbers of seconds in JSON logs (the text
// format shows them as Go durations, e.g. 1.5s).
func JSONAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.Float64Value(a.Value.Duration().Seconds())
	}
	return a
}
