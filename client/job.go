package client

import (
	"io"
	"log/slog"
	"time"

	"github.com/tether-ci/tether/internal/random"
	"github.com/tether-ci/tether/protocol"
)

// Job is what Run asks the shim to run, with CI job semantics: the main
// scripts in order until the first one fails, then the after-scripts always.
type Job struct {
	// ID identifies the job to the shim, which runs an ID only once, so the
	// session can resend the job after a reconnect. Run picks a random ID
	// when it is empty.
	ID string
	// Scripts are the main scripts' paths as the shim sees them.
	Scripts []string
	// Argv, instead of Scripts, is a program and its arguments run as the
	// job's one main script without a shell (an image with none runs it
	// too): Argv[0] is found on the scripts' PATH when it has no slash,
	// as execvp does. The shim's records name it by Argv[0]. It needs a
	// tether-shim that knows the job command's argv field.
	Argv []string
	// After are the after-scripts' paths, run after the main scripts
	// whether they failed or not (and after a cancel).
	After []string
	// Mask are secret values the shim replaces with [MASKED] in the job's
	// output (and their URL-encoded forms) before it leaves the shim, so
	// no client, spool file or pod log sees them. Each must be at least
	// protocol.MinMaskLen (8) bytes. They travel in the job command only,
	// never in a ConfigMap, Secret or log.
	Mask []string
	// Files are delivered to the shim over the stream before the job's
	// scripts run, and deleted once the job ended (see File).
	Files []File
	// Shell, an absolute path in the container, runs every script of the
	// job whatever its "#!" line says; "" lets the shim choose (a script's
	// "#!" interpreter, else its default shell).
	Shell string
	// AfterTimeout is the after-scripts' budget once the shim's deadline
	// stopped the job's main scripts, instead of the shim's own
	// (tether-shim --after-timeout): 0 keeps the shim's, a negative value
	// means the after-scripts do not run after the deadline. Sent in
	// milliseconds (a positive value is at least 1 ms). In a pod the
	// kubelet's activeDeadlineSeconds leaves room for kube.Spec.AfterTimeout
	// only: a larger budget here is cut short by it.
	AfterTimeout time.Duration
	// Timeout is the job's own time limit, counted by the shim from when
	// the job's first script starts (0 or less: none; sent in milliseconds, at
	// least 1 ms): when it passes, the shim stops the running script
	// (TERM, grace, KILL) and runs none of the job's remaining scripts,
	// after-scripts included, in band, whether or not a client is
	// attached. The stopped script's status error starts with
	// protocol.JobTimeoutReason. The shim's own deadline still applies.
	Timeout time.Duration
	// EnvFile, when set, is the Path of one of Files holding the job's
	// variables (protocol.EncodeEnvFile): the shim gives them to the
	// job's scripts on top of its own environment. A pod started before
	// its job (a warm pod) gets the job's variables this way, never
	// through a Secret. The file is deleted once the job ended, like
	// every file of Files.
	EnvFile string
	// Deadline, when above 0, sets the shim's deadline to this long after
	// it received the job (as tether-shim --deadline does from the
	// shim's start): for a pod that was started before its job. Sent in
	// milliseconds (at least 1 ms).
	Deadline time.Duration
	// TTL, when above 0, sets the shim's time to live to this long after
	// it received the job, instead of the pod's TTL annotation (which
	// counts from the pod's creation). Sent in milliseconds (at least 1
	// ms).
	TTL time.Duration
}

// timeoutMS is d as the job command's timeout_ms (0 = none).
func timeoutMS(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return max(d.Milliseconds(), 1)
}

// afterTimeoutMS is d as the job command's after_timeout_ms.
func afterTimeoutMS(d time.Duration) int64 {
	switch {
	case d < 0:
		return -1
	case d > 0:
		return max(d.Milliseconds(), 1)
	}
	return 0
}

// AddEnvFile gives the job's scripts env as a variables file at path,
// delivered with the job (one of Files, named by EnvFile, mode 0600);
// nothing without variables.
func (j *Job) AddEnvFile(path string, env map[string]string) error {
	if len(env) == 0 {
		return nil
	}
	data, err := protocol.EncodeEnvFile(env)
	if err != nil {
		return err
	}
	j.EnvFile = path
	j.Files = append(j.Files, File{Path: path, Content: data, Mode: 0o600})
	return nil
}

// newJobID returns a random job ID.
func newJobID() string { return NewJobID("job") }

// NewJobID returns a fresh job ID: kind ("step", "prepare", ...; it says
// what the job is for in logs), "-" and 16 random hex digits. The shim
// runs a job ID once, so each job a client submits takes a new one.
func NewJobID(kind string) string { return kind + "-" + random.Hex(8) }

// Options configure a session. Only Output is required; zero durations take
// the documented defaults.
type Options struct {
	// Output receives the job's output bytes, exactly as the scripts wrote
	// them (stdout and stderr interleaved in the order written, unless
	// Stderr is set). Required.
	Output io.Writer
	// Stderr, when set, keeps the scripts' stderr apart: Run asks the shim
	// for a pipe of its own for it (the job command's "stderr":"separate",
	// tether-shim of protocol 3 or later; an older one ignores it and
	// merges), and its bytes, exactly as written, go here while stdout's
	// go to Output. The order between the two is then only as good as two
	// pipes allow. Output is written first whenever both have bytes
	// waiting. nil: stderr is merged into Output. For Attach it only
	// says where stderr records go (a job submitted without the option
	// has none).
	Stderr io.Writer
	// Events, if set, is called with progress events, one call at a time
	// (from the session's goroutines, in stream order); it must not block
	// for long: output waits meanwhile.
	Events func(Event)
	// Logger receives the session's diagnostics; nil discards them.
	Logger *slog.Logger
	// PingInterval is how often the session pings the shim; a connection
	// has at most one ping unanswered, so a ping whose answer is late
	// (the shim's output is read slowly) delays the next. Default 5s.
	PingInterval time.Duration
	// StallTimeout is how long a connection may deliver nothing at all
	// (not even a ping answer) before the session treats it as dead and
	// reconnects. Default 30s.
	StallTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the exponential reconnect backoff.
	// Defaults 100ms and 5s.
	ReconnectMin, ReconnectMax time.Duration
	// ReconnectTimeout is how long the shim may stay unreachable before the
	// session gives up with an error wrapping ErrNoResult. Default 2m.
	ReconnectTimeout time.Duration
	// CancelGrace is the TERM→KILL grace period sent with the cancel
	// command; 0 keeps the shim's default (its --grace flag).
	CancelGrace time.Duration
	// CancelTimeout is how long the session waits for the job's result after
	// sending cancel. Default 60s.
	CancelTimeout time.Duration
	// OutputLimit, when above 0, is the most output written to Output
	// and Stderr together: the rest is dropped (Result.OutputDropped counts it) while the job
	// runs on to its own exit code.
	OutputLimit int64
	// From is the stream offset Run starts reading at: 0 (the default)
	// for a fresh shim; for a job submitted to a shim that already ran
	// others (a pod serving a GitLab job's stages), the stream's end as
	// the previous session's Result.Offset or StreamEnd reports it, so
	// their records are not replayed. Attach takes its own offset.
	From int64
	// FromEnd makes Run start reading at the stream's end as the shim
	// reports it on the first connection, instead of at From: the job goes
	// out once the shim answered, over the same attach, where StreamEnd
	// and Run take one attach each. For a shim that already ran other jobs
	// and is idle (a GitLab job's next stage).
	FromEnd bool
	// ExitShim makes the session send the exit command once the job's result
	// arrived, and wait briefly for the shim's final record.
	ExitShim bool
	// KeepConn, when set, receives the session's connection when Run ends
	// with its job's record (and not ExitShim), instead of the session
	// closing it: synced to the shim, with no read or write of the session
	// in flight, it is ready at once for the caller's next job on the same
	// shim (a Transport whose first Connect returns it; that session
	// resumes by offset and drops what came before its resume answer, so
	// the records after this job's are no loss). An attach opened for the
	// next job instead is slower to use: the API server connects it to the
	// container runtime only after it answered the upgrade. The receiver
	// owns the connection: it reads it (the shim waits while its stdout is
	// not read) or closes it. A session that ends any other way closes its
	// connection as before. Called before Run returns.
	KeepConn func(Conn)
}

// Defaults of Options.
const (
	DefaultPingInterval     = 5 * time.Second
	DefaultStallTimeout     = 30 * time.Second
	DefaultReconnectMin     = 100 * time.Millisecond
	DefaultReconnectMax     = 5 * time.Second
	DefaultReconnectTimeout = 2 * time.Minute
	DefaultCancelTimeout    = 60 * time.Second
)

// withDefaults returns o with zero fields set to their defaults.
func (o Options) withDefaults() Options {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.PingInterval, DefaultPingInterval)
	set(&o.StallTimeout, DefaultStallTimeout)
	set(&o.ReconnectMin, DefaultReconnectMin)
	set(&o.ReconnectMax, DefaultReconnectMax)
	set(&o.ReconnectTimeout, DefaultReconnectTimeout)
	set(&o.CancelTimeout, DefaultCancelTimeout)
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = o.ReconnectMin
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Result is the outcome of a job.
type Result struct {
	// ExitCode is the job's exit code: the first failing main script's exit
	// code, else 0. When the shim exited before the job finished it is the
	// shim's exit code.
	ExitCode int
	// FailedScript is the first main script that failed, or "".
	FailedScript string
	// Cancelled reports whether the job was stopped by a cancel.
	Cancelled bool
	// Statuses holds one status per script that ran, in order.
	Statuses []protocol.Status
	// Exit is the shim's final record, if it arrived.
	Exit *protocol.Exit
	// Reconnects counts the connections after the first.
	Reconnects int
	// Offset is the stream offset after the last record received; Attach
	// can continue from it.
	Offset int64
	// OutputDropped counts the output bytes not written to Options.Output
	// because Options.OutputLimit was reached.
	OutputDropped int64
}
