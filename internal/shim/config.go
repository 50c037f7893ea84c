package shim

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/tether-ci/tether/internal/contract"
)

// Config is tether-shim's configuration. Every field has a flag and an
// environment variable (TETHER_ + the flag name in capitals, '-' → '_');
// a flag given on the command line wins over the environment.
type Config struct {
	// EnvNames are the environment variables that configure the shim
	// (TETHER_SHELL, …): scripts do not inherit them.
	EnvNames map[string]bool
	// Shell runs every script, whatever its "#!" line ("" = a script's
	// "#!" interpreter, else bash if present, else sh).
	Shell string
	// Deadline is when the shim stops the job and exits (zero = none).
	Deadline time.Time
	// Grace is the time between SIGTERM and SIGKILL when stopping a script.
	Grace time.Duration
	// AfterTimeout is the after-scripts' own budget once the deadline
	// stopped the main scripts: they still run, for at most this long
	// (counted from the deadline plus Grace); 0 = they do not run.
	AfterTimeout time.Duration
	// TTLFile is a downward-API annotations file holding the TTL annotation.
	TTLFile string
	// Created is the time the TTL counts from (zero = shim start).
	Created time.Time
	// IdleTimeout ends the shim when no script runs and no command or ping
	// came for this long (0 = never).
	IdleTimeout time.Duration
	// ActivityFile is a file the shims of one pod share: each marks it
	// while active, and the idle timeout also counts the others' marks
	// ("" = none; see activity.go).
	ActivityFile string
	// ExitOnStdinEOF ends the shim once stdin is closed and queued work is done.
	ExitOnStdinEOF bool
	// DrainTimeout bounds the wait for output held open by background children.
	DrainTimeout time.Duration
	// KillLeftovers kills a finished script's process group after the drain.
	KillLeftovers bool
	// TTY runs scripts under a raw pseudo-terminal.
	TTY bool
	// SpoolDir keeps the whole record stream in a file for replay ("" = memory).
	SpoolDir string
	// ReplayBytes is the size of the memory replay window.
	ReplayBytes int64
	// FlushDelay caps how long an unfinished output line is held back while
	// more output already waits in the pipe; with nothing waiting it goes out
	// at once.
	FlushDelay time.Duration
	// FilesDir is where file commands may write ("" = they are refused).
	FilesDir string
	// MaskEnv names environment variables whose values are masked in all
	// script output (each at least protocol.MinMaskLen bytes).
	MaskEnv []string
	// CommandAliases are commands scripts may call by another name: each
	// Name missing from the scripts' PATH runs its Target (see aliases.go).
	CommandAliases []commandAlias
	// Commands is a FIFO to read commands from instead of stdin ("" = stdin).
	Commands string
	// LogLevel is the level of diagnostics written to stderr.
	LogLevel slog.Level
	// Start is when the shim started; deadlines in seconds count from it.
	Start time.Time
	// ScriptTimerSlack is the timer slack scripts are forked with when the
	// shim's own threads run with another (set by Main, not a flag; 0 =
	// scripts inherit the forking thread's).
	ScriptTimerSlack time.Duration
}

// DefaultAfterTimeout is the after-scripts' budget after a deadline, as in
// GitLab (after_script_timeout).
const DefaultAfterTimeout = contract.DefaultAfterTimeoutSeconds * time.Second

// TTLAnnotation is the pod annotation holding the TTL in seconds.
const TTLAnnotation = contract.AnnotationTTL

// ParseConfig parses tether-shim's flags and environment. Usage and errors
// go to stderr; flag.ErrHelp is returned for --help.
func ParseConfig(args []string, getenv func(string) string, stderr io.Writer, now time.Time) (*Config, error) {
	cfg := &Config{Start: now}
	fs := flag.NewFlagSet("tether-shim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	deadline := fs.String("deadline", "", "stop the job and exit at this time: RFC 3339, or seconds from start (0 or empty = no deadline)")
	created := fs.String("created", "", "RFC 3339 time the TTL counts from (default: shim start)")
	onEOF := fs.String("on-stdin-eof", "exit", "what to do when stdin closes: exit (after queued work) or wait")
	replay := fs.String("replay-bytes", "4194304", "memory replay window in bytes (used without --spool-dir)")
	maskEnv := fs.String("mask-env", "", "comma-separated names of environment variables whose values are replaced with [MASKED] in all script output (also URL-encoded)")
	logLevel := fs.String("log-level", "info", "diagnostics on stderr: debug, info, warn, error")
	fs.StringVar(&cfg.Shell, "shell", "", "shell that runs every script, whatever its #! line (default: a script's #! interpreter, else bash if found, else sh)")
	fs.DurationVar(&cfg.Grace, "grace", contract.DefaultGraceSeconds*time.Second, "time between SIGTERM and SIGKILL when a script is stopped")
	fs.DurationVar(&cfg.AfterTimeout, "after-timeout", DefaultAfterTimeout, "when the deadline stops the job, the after-scripts still run for at most this long after the main script's grace (0 = they do not run)")
	fs.StringVar(&cfg.TTLFile, "ttl-file", "", "downward-API annotations file; the "+TTLAnnotation+" annotation (seconds) ends the shim")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "exit when no script runs and no command or ping arrived for this long (0 = never)")
	fs.StringVar(&cfg.ActivityFile, "activity-file", "", "a file the shims of one pod share (created if missing): each marks it while a client reaches it or a script runs, and the idle timeout also counts the others' marks")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", 2*time.Second, "how long to wait for output held open by a finished script's background children")
	fs.BoolVar(&cfg.KillLeftovers, "kill-leftovers", false, "SIGKILL a finished script's process group after the drain")
	fs.BoolVar(&cfg.TTY, "tty", false, "run scripts under a raw pseudo-terminal")
	fs.StringVar(&cfg.SpoolDir, "spool-dir", "", "keep the whole record stream in DIR/records for replay (default: memory window)")
	fs.StringVar(&cfg.FilesDir, "files-dir", "", "directory the file command may write scripts into (a memory-backed volume in a pod; empty = the file command is refused)")
	fs.Var(aliasFlag{&cfg.CommandAliases}, "command-alias", "NAME=TARGET: where the scripts' PATH has no NAME but has TARGET, scripts that call NAME run TARGET (a link in the spool directory, put first on their PATH); repeatable or comma-separated")
	fs.StringVar(&cfg.Commands, "commands", "", "read commands from this FIFO (created if missing, opened read-write so writers may come and go) instead of stdin")
	fs.DurationVar(&cfg.FlushDelay, "flush-delay", 20*time.Millisecond, "longest an unfinished output line is held back to be joined with output already waiting in the pipe (a line with nothing after it goes out at once)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: tether-shim [flags]        serve: script paths and commands on stdin, records on stdout
       tether-shim copy DEST      copy this binary to DEST (for an init container)
       tether-shim send FIFO      copy command lines from stdin into a --commands FIFO
       tether-shim version

Every flag can also be set with the environment variable shown in brackets.

`)
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(stderr, "  --%s [%s]\n    \t%s (default %q)\n", f.Name, envName(f.Name), f.Usage, f.DefValue)
		})
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("unexpected argument %q: tether-shim reads script paths from stdin", fs.Arg(0))
	}
	cfg.EnvNames = map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { cfg.EnvNames[envName(f.Name)] = true })
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(envName(f.Name)); v != "" && !set[f.Name] && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("environment %s=%q: %w", envName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}
	var err error
	if cfg.Deadline, err = parseDeadline(*deadline, now); err != nil {
		return nil, err
	}
	if *created != "" {
		if cfg.Created, err = time.Parse(time.RFC3339, *created); err != nil {
			return nil, fmt.Errorf("--created %q is not an RFC 3339 time: %w", *created, err)
		}
	}
	switch *onEOF {
	case "exit":
		cfg.ExitOnStdinEOF = true
	case "wait":
	default:
		return nil, fmt.Errorf("--on-stdin-eof %q: want exit or wait", *onEOF)
	}
	if cfg.ReplayBytes, err = strconv.ParseInt(*replay, 10, 64); err != nil || cfg.ReplayBytes < 0 {
		return nil, fmt.Errorf("--replay-bytes %q is not a non-negative number of bytes", *replay)
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", *logLevel, err)
	}
	for name, d := range map[string]time.Duration{"grace": cfg.Grace, "after-timeout": cfg.AfterTimeout, "idle-timeout": cfg.IdleTimeout, "drain-timeout": cfg.DrainTimeout, "flush-delay": cfg.FlushDelay} {
		if d < 0 {
			return nil, fmt.Errorf("--%s %v is negative", name, d)
		}
	}
	for _, name := range strings.Split(*maskEnv, ",") {
		if name = strings.TrimSpace(name); name != "" {
			cfg.MaskEnv = append(cfg.MaskEnv, name)
		}
	}
	if cfg.FlushDelay == 0 {
		cfg.FlushDelay = time.Millisecond
	}
	return cfg, nil
}

func envName(flagName string) string {
	return "TETHER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func parseDeadline(v string, now time.Time) (time.Time, error) {
	if v == "" || v == "0" {
		return time.Time{}, nil
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return time.Time{}, fmt.Errorf("--deadline %q is negative", v)
		}
		return now.Add(time.Duration(secs * float64(time.Second))), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, errors.New("--deadline " + strconv.Quote(v) + ": want seconds from start or an RFC 3339 time")
	}
	return t, nil
}
