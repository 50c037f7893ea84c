package hookapi

import "errors"

// State is what the hook hands the runner in prepare_job's response and
// gets back with every later command: where the job's pod is.
type State struct {
	// Pod and Namespace name the job's pod.
	Pod       string `json:"tetherPod"`
	Namespace string `json:"tetherNamespace"`
	// Actions are the action directories (under ActionsDir) already
	// delivered into the job container.
	Actions []string `json:"tetherActions,omitempty"`
	// Env are the job container's variables when its pod is a claimed
	// warm pod, whose spec holds none (the runner keeps the state and
	// hands it to every command): each script step gets them over the
	// attach stream (addContainerEnv). Empty for a created pod, whose
	// container has them.
	Env map[string]string `json:"tetherEnv,omitempty"`
}

// ErrNoState is the error of a command that needs the job's pod without
// state: prepare_job did not run, or failed.
var ErrNoState = errors.New("the input carries no state naming the job's pod: prepare_job did not run or did not succeed " +
	"(the job needs a container: set container: in the workflow's job)")

// JobPod returns s when it names the job's pod, else ErrNoState.
func JobPod(s *State) (*State, error) {
	if s == nil || s.Pod == "" || s.Namespace == "" {
		return nil, ErrNoState
	}
	return s, nil
}
