package hookapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Commands the runner sends (Input.Command).
const (
	CommandPrepareJob       = "prepare_job"
	CommandRunScriptStep    = "run_script_step"
	CommandRunContainerStep = "run_container_step"
	CommandCleanupJob       = "cleanup_job"
)

// maxInput bounds what ReadInput reads from stdin: the runner sends one
// line (its largest part is a step's environment).
const maxInput = 64 << 20

// Input is the JSON object the runner writes on the hook's stdin, one line
// (actions/runner HookInput.cs, camelCase, nulls included).
type Input struct {
	// Command is one of the Command* constants.
	Command string `json:"command"`
	// ResponseFile is the file the runner created empty for the response
	// (a runner-host path under _work/_temp/_runner_hook_responses).
	ResponseFile string `json:"responseFile"`
	// Args are the command's arguments, decoded by the command.
	Args json.RawMessage `json:"args"`
	// State is what the last response's state was (null for prepare_job).
	State *State `json:"state"`
}

// Container is the runner's description of a container (HookContainer):
// the job container, a service or a container step.
type Container struct {
	Image                string            `json:"image"`
	Dockerfile           string            `json:"dockerfile"`
	EntryPoint           string            `json:"entryPoint"`
	EntryPointArgs       []string          `json:"entryPointArgs"`
	WorkingDirectory     string            `json:"workingDirectory"`
	CreateOptions        string            `json:"createOptions"`
	Registry             *Registry         `json:"registry"`
	EnvironmentVariables map[string]string `json:"environmentVariables"`
	PortMappings         []string          `json:"portMappings"`
	SystemMountVolumes   []Mount           `json:"systemMountVolumes"`
	UserMountVolumes     []Mount           `json:"userMountVolumes"`
}

// Registry are the credentials for a container's image.
type Registry struct {
	Username  string `json:"username"`
	Password  string `json:"password"`
	ServerURL string `json:"serverUrl"`
}

// Mount is a volume the runner asks for (sources are runner-host paths).
type Mount struct {
	UserProvidedValue string `json:"userProvidedValue"`
	SourceVolumePath  string `json:"sourceVolumePath"`
	TargetVolumePath  string `json:"targetVolumePath"`
	ReadOnly          bool   `json:"readOnly"`
}

// PrepareJobArgs are prepare_job's arguments.
type PrepareJobArgs struct {
	// Container is the job container; nil for a job without one.
	Container *Container `json:"container"`
	// Services are the job's services, in the workflow's order.
	Services []Container `json:"services"`
}

// ScriptStepArgs are run_script_step's arguments.
type ScriptStepArgs struct {
	EntryPoint           string            `json:"entryPoint"`
	EntryPointArgs       []string          `json:"entryPointArgs"`
	EnvironmentVariables map[string]string `json:"environmentVariables"`
	PrependPath          PathList          `json:"prependPath"`
	WorkingDirectory     string            `json:"workingDirectory"`
}

// PathList is prependPath: a list, most recent first; runners up to 2.293
// sent one ":"-joined string, which is accepted too.
type PathList []string

// UnmarshalJSON accepts a list of strings, a string or null.
func (p *PathList) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*p = list
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("prependPath: want a list of strings or a string: %w", err)
	}
	*p = nil
	for _, e := range strings.Split(s, ":") {
		if e != "" {
			*p = append(*p, e)
		}
	}
	return nil
}

// ReadInput reads the runner's input from r (the whole of stdin: the
// runner writes one line and closes it) and checks what every command
// needs: a known command and a response file path.
func ReadInput(r io.Reader) (*Input, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read the runner's input from stdin: %w", err)
	}
	if len(b) > maxInput {
		return nil, fmt.Errorf("the input on stdin is larger than %d bytes", maxInput)
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New("no input on stdin: the runner writes one JSON object (command, responseFile, args, state); " +
			"run this command only as the runner's container hook (ACTIONS_RUNNER_CONTAINER_HOOKS)")
	}
	var in Input
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("the input on stdin is not the runner's JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("the input on stdin holds more than one JSON value: the runner writes exactly one object")
	}
	switch in.Command {
	case CommandPrepareJob, CommandRunScriptStep, CommandRunContainerStep, CommandCleanupJob:
	case "":
		return nil, errors.New("the input has no command (want prepare_job, run_script_step, run_container_step or cleanup_job)")
	default:
		return nil, fmt.Errorf("unknown command %q (want prepare_job, run_script_step, run_container_step or cleanup_job): is the runner newer than this hook?", in.Command)
	}
	if in.ResponseFile == "" {
		return nil, fmt.Errorf("command %s: the input has no responseFile: the runner always names the file it reads the response from", in.Command)
	}
	return &in, nil
}

// DecodeArgs decodes the command's arguments into v (a PrepareJobArgs,
// ScriptStepArgs or Container); null or absent args leave v as is.
func (in *Input) DecodeArgs(v any) error {
	if len(in.Args) == 0 || bytes.Equal(bytes.TrimSpace(in.Args), []byte("null")) {
		return nil
	}
	if err := json.Unmarshal(in.Args, v); err != nil {
		return fmt.Errorf("command %s: its args: %w", in.Command, err)
	}
	return nil
}
