package gitlab

// The GitLab driver's two kinds of output:
//
//   - the job log: the runner copies the driver's stdout and stderr into it,
//     so the driver writes short sentences there (jobLogHandler for the
//     progress of the kube package, plain lines for its own), each fact
//     once, and nothing of its own between a stage's output bytes;
//   - its own structured log (slog records with times, levels and fields),
//     written only when a setting asks for it (LogSettings): to a file,
//     or to stderr, which is the job log.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/tether-ci/tether/internal/cmdutil"
)

// LogSettings are the driver's log settings: its own structured log,
// written only when one of them asks for it.
type LogSettings struct {
	// Verbose logs debug records too, client-go's requests included.
	Verbose bool
	// LogFormat is "text" or "json"; set, it asks for the log.
	LogFormat string
	// LogFile receives the log instead of stderr (appended; every stage
	// of every job writes to it, each record naming its job).
	LogFile string
	// log is the structured log the settings selected (set by Command).
	log *slog.Logger
}

// register adds -v/--verbose, --log-format and --log-file to fs.
func (l *LogSettings) register(fs *pflag.FlagSet) {
	fs.BoolVarP(&l.Verbose, "verbose", "v", false, "write the driver's structured log with debug records (client-go's requests included): to log-file, else to stderr, which the runner puts in the job log")
	fs.StringVar(&l.LogFormat, "log-format", "", "write the driver's structured log in `FORMAT` text or json: to log-file, else to stderr, which the runner puts in the job log (default: no structured log)")
	fs.StringVar(&l.LogFile, "log-file", "", "append the driver's structured log (info records, debug with verbose) to `FILE` instead of the job log")
}

// validate checks the log settings.
func (l *LogSettings) validate() error {
	switch l.LogFormat {
	case "", "text", "json":
		return nil
	}
	return fmt.Errorf("log-format %q: want text or json", l.LogFormat)
}

// asked reports whether a setting asks for the structured log.
func (l *LogSettings) asked() bool {
	return l.Verbose || l.LogFormat != "" || l.LogFile != ""
}

// openLog returns the driver's structured log: discarded unless a setting
// asks for it, else written to the log file or to stderr. closeLog closes
// the log file.
func (l *LogSettings) openLog(stderr io.Writer) (log *slog.Logger, closeLog func() error, err error) {
	noClose := func() error { return nil }
	if !l.asked() {
		return slog.New(slog.DiscardHandler), noClose, nil
	}
	lf := cmdutil.LogFlags{Verbose: l.Verbose, Format: l.LogFormat}
	w, closeLog := stderr, noClose
	if l.LogFile != "" {
		f, err := os.OpenFile(l.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("log-file: %w", err)
		}
		w, closeLog, lf.FullTime = f, f.Close, true
	}
	log, err = lf.Logger(w)
	if err != nil {
		return nil, nil, errors.Join(err, closeLog())
	}
	return log, closeLog, nil
}

// jobLogHandler writes the records of the kube package's progress (pod
// phases and events while prepare waits) to the job log as sentences:
// "Waiting for pod NS/NAME to be running: it is Pending", "Pod NS/NAME:
// Pulling: ...", a warning as "WARNING: ...". Records the driver says in
// its own words are left out. It handles Info and above.
type jobLogHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	attrs []slog.Attr
}

// newJobLogHandler returns a jobLogHandler writing to w.
func newJobLogHandler(w io.Writer) *jobLogHandler {
	return &jobLogHandler{mu: &sync.Mutex{}, w: w}
}

func (h *jobLogHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo
}

func (h *jobLogHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := append([]slog.Attr(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	line := jobLogSentence(r.Message, attrs)
	if line == "" {
		return nil
	}
	switch {
	case r.Level >= slog.LevelError:
		line = "ERROR: " + line
	case r.Level >= slog.LevelWarn:
		line = "WARNING: " + line
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line+"\n")
	return err
}

func (h *jobLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &jobLogHandler{mu: h.mu, w: h.w, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup keeps the handler: the sentences name fields by their keys.
func (h *jobLogHandler) WithGroup(string) slog.Handler { return h }

// jobLogSentence is a progress record as a job-log sentence, or "" for
// one the driver says itself.
func jobLogSentence(msg string, attrs []slog.Attr) string {
	get := func(key string) string {
		for _, a := range attrs {
			if a.Key == key {
				return a.Value.Resolve().String()
			}
		}
		return ""
	}
	switch msg {
	case "pod created":
		return "" // prepare says which pod it created, with its image
	case "pod phase":
		if get("phase") == "Running" {
			return "" // prepare says the pod runs
		}
		return fmt.Sprintf("Waiting for pod %s to be running: it is %s", get("pod"), get("phase"))
	case "pod event":
		return fmt.Sprintf("Pod %s: %s: %s", get("pod"), get("reason"), get("message"))
	}
	var b strings.Builder
	b.WriteString(upperFirst(msg))
	for i, a := range attrs {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", a.Key, a.Value.Resolve().String())
	}
	if len(attrs) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// upperFirst returns s with its first letter upper-case.
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// fanout hands each record to every handler that is enabled for it.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, level slog.Level) bool {
	for _, h := range f {
		if h.Enabled(ctx, level) {
			return true
		}
	}
	return false
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range f {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (f fanout) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (f fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(name)
	}
	return out
}

// jobLog returns prepare's logger: progress sentences to the job log (w)
// and every record to the driver's structured log, if one was asked for.
func (f *Settings) jobLog(w io.Writer) *slog.Logger {
	h := slog.Handler(newJobLogHandler(w))
	if f.log != nil {
		h = fanout{h, f.log.Handler()}
	}
	return slog.New(h)
}
