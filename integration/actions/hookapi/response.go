package hookapi

import (
	"encoding/json"
	"fmt"
	"os"
)

// PrepareResponse is what prepare_job writes to the response file
// (actions/runner HookResponse.cs).
type PrepareResponse struct {
	// State is passed back to every later command.
	State *State `json:"state"`
	// Context describes the job container and the services.
	Context ResponseContext `json:"context"`
	// IsAlpine picks the runner's alpine build of node for JavaScript
	// actions; required whenever the job has a container.
	IsAlpine bool `json:"isAlpine"`
}

// ResponseContext is the response's context.
type ResponseContext struct {
	// Container is the job container (job.container in the workflow).
	Container *ResponseContainer `json:"container"`
	// Services are the services, in the order of prepare_job's args (the
	// runner matches them by position); never null.
	Services []ResponseContainer `json:"services"`
}

// ResponseContainer is one container of the response.
type ResponseContainer struct {
	// ID and Network become job.services.<label>.id/network.
	ID      string `json:"id,omitempty"`
	Network string `json:"network,omitempty"`
	// Image is informational (the runner ignores it).
	Image string `json:"image,omitempty"`
	// Ports maps a container port to the port a step reaches it on; the
	// runner iterates it, so it is never null.
	Ports map[string]string `json:"ports"`
}

// StepResponse is what run_script_step may write: a state that replaces
// the one the runner passes to later commands.
type StepResponse struct {
	State *State `json:"state"`
}

// WriteResponse writes v as the response file at path (the runner created
// it empty and reads it after the hook exits 0).
func WriteResponse(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the response: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write the response file (the runner's responseFile): %w", err)
	}
	return nil
}
