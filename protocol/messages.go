package protocol

// Hello is the payload of the handshake record, the first record of every
// stream (offset 0).
type Hello struct {
	// Protocol is the protocol version the shim speaks (Version).
	Protocol int `json:"protocol"`
	// Shim is the tether-shim version.
	Shim string `json:"shim"`
	// MaxRecord is the largest record the shim writes, newline included.
	MaxRecord int `json:"max_record"`
	// PID is the shim's process ID (1 when it is the container's init).
	PID int `json:"pid"`
	// Shell is the shell scripts run with.
	Shell string `json:"shell"`
	// TTY reports whether scripts run under a pseudo-terminal.
	TTY bool `json:"tty"`
	// Replay says how the shim keeps records for resume: "file" keeps the
	// whole stream, "memory" the last ReplayBytes bytes.
	Replay string `json:"replay"`
	// ReplayBytes is the memory replay window in bytes (0 for "file").
	ReplayBytes int64 `json:"replay_bytes,omitempty"`
	// CommandAliases reports how each of the shim's command aliases
	// (tether-shim --command-alias) resolved, in the order given; absent
	// when none was given (and from shims older than the field).
	CommandAliases []CommandAlias `json:"command_aliases,omitempty"`
}

// CommandAlias is how one command alias (NAME=TARGET) resolved when the
// shim started: scripts run Path when they call Name.
type CommandAlias struct {
	// Name is the command scripts call.
	Name string `json:"name"`
	// Target is the command that stands in for Name where the scripts'
	// PATH has no Name.
	Target string `json:"target"`
	// Path is what scripts run for Name: Name's own file where PATH has
	// it, else Target's file, linked as Name in a directory the shim put
	// first on the scripts' PATH. "" when neither is on PATH (or the link
	// could not be made: Error says why): scripts cannot run Name.
	Path string `json:"path,omitempty"`
	// Linked is set when Path is Target's file, linked as Name.
	Linked bool `json:"linked,omitempty"`
	// Error says why Target was found but could not be linked as Name.
	Error string `json:"error,omitempty"`
}

// Missing reports whether scripts cannot run the alias's Name.
func (a CommandAlias) Missing() bool { return a.Path == "" }

// Begin is the payload of a TypeBegin record: a script starts.
type Begin struct {
	// Script is the script path as the client sent it.
	Script string `json:"script"`
	// Phase is "script" for a job's main scripts and plain commands, "after"
	// for a job's after-scripts.
	Phase string `json:"phase"`
	// Job is the ID of the job command the script belongs to, or "".
	Job string `json:"job,omitempty"`
	// OOMKilled is set when the script died of SIGKILL while the memory
	// cgroup's OOM-kill counter grew: the kernel killed it for memory.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// MemoryLimit is the memory cgroup's limit in bytes when OOMKilled is
	// set (0 = unknown or none).
	MemoryLimit int64 `json:"memory_limit,omitempty"`
}

// Status is the payload of a TypeStatus record, written after every script
// (including one that could not start). The field names script and
// command_exit_code are GitLab Runner's, so its parsers understand it.
type Status struct {
	// Script is the script path as the client sent it.
	Script string `json:"script"`
	// CommandExitCode is the exit status: N for exit(N), 128+N for signal N,
	// 126/127 when the script could not be run.
	CommandExitCode int `json:"command_exit_code"`
	// Signal is the name of the signal that ended the script ("SIGKILL"), or "".
	Signal string `json:"signal"`
	// DurationMS is how long the script ran, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Error explains why the script could not run or was stopped, or "".
	Error string `json:"error"`
	// Phase is "script" or "after", as in Begin.
	Phase string `json:"phase,omitempty"`
	// Job is the ID of the job command the script belongs to, or "".
	Job string `json:"job,omitempty"`
	// OOMKilled is set when the script died of SIGKILL while the memory
	// cgroup's OOM-kill counter grew: the kernel killed it for memory.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// MemoryLimit is the memory cgroup's limit in bytes when OOMKilled is
	// set (0 = unknown or none).
	MemoryLimit int64 `json:"memory_limit,omitempty"`
}

// JobDone is the payload of a TypeJob record: every script of a job command
// has run (or was skipped after a failure or a cancel).
type JobDone struct {
	// ExitCode is the job's exit code: the first failing main script's code,
	// else 0. After-scripts never change it.
	ExitCode int `json:"exit_code"`
	// FailedScript is the first main script that failed, or "".
	FailedScript string `json:"failed_script"`
	// Cancelled reports whether a cancel command stopped the job.
	Cancelled bool `json:"cancelled"`
	// Job is the job command's ID.
	Job string `json:"job,omitempty"`
}

// ErrorRecord is the payload of a TypeError record: a command line that was
// rejected or discarded. The shim keeps serving.
type ErrorRecord struct {
	// Error says what was wrong.
	Error string `json:"error"`
	// Input is the offending input (truncated).
	Input string `json:"input,omitempty"`
}

// Exit reasons carried by the final record.
const (
	ReasonExitCommand = "exit-command" // an exit command and nothing left to run
	ReasonStdinEOF    = "stdin-eof"    // stdin closed and nothing left to run
	ReasonDeadline    = "deadline"     // the --deadline passed
	ReasonTTL         = "ttl"          // the pod's TTL annotation expired
	ReasonIdle        = "idle"         // no command and no ping for --idle-timeout
	ReasonSignal      = "signal"       // the shim got SIGTERM/SIGINT/...
	ReasonFatal       = "fatal"        // the shim could not continue (I/O error)
)

// Exit is the payload of the final TypeExit record, the last record the
// shim writes before it exits with ExitCode.
type Exit struct {
	// Reason is one of the Reason* constants.
	Reason string `json:"reason"`
	// ExitCode is the shim's own exit status.
	ExitCode int `json:"exit_code"`
	// Message explains the reason to a person.
	Message string `json:"message"`
}

// Resumed is the payload of the unsequenced TypeResumed record that answers a
// resume command. The replayed records follow it directly.
type Resumed struct {
	// Nonce echoes the command's nonce; the client ignores everything before
	// the answer carrying its own nonce.
	Nonce string `json:"nonce"`
	// From is the offset the replay starts at.
	From int64 `json:"from"`
	// End is the stream offset at the time of the answer: the replay covers
	// [From, End) and live records continue from End.
	End int64 `json:"end"`
	// Error is set when the replay is impossible (From no longer retained or
	// past End); no records are replayed then.
	Error string `json:"error,omitempty"`
	// Oldest is the oldest offset still retained.
	Oldest int64 `json:"oldest"`
}

// Alive.State values.
const (
	// StateIdle: no script runs and none is queued.
	StateIdle = "idle"
	// StateRunning: a script runs, or work is queued.
	StateRunning = "running"
)

// Alive is the payload of the unsequenced TypeAlive record that answers a
// ping command.
type Alive struct {
	// Nonce echoes the ping's nonce.
	Nonce string `json:"nonce"`
	// State is StateIdle or StateRunning.
	State string `json:"state"`
	// Script is the running script, or "".
	Script string `json:"script,omitempty"`
	// End is the current stream offset.
	End int64 `json:"end"`
}
