package actionsrunner

// What the runner hands the hook process and reads from it besides the
// response file: stdin, environment, exit code.

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"syscall"
)

// marshalInput is the hook's stdin: one JSON line, then "\n"
// (ContainerHookManager.cs, JsonUtility.ToString; ProcessInvoker.cs
// WriteLine). Keys in HookInput.cs's order, and characters such as <, >
// and & written as they are, as Newtonsoft.Json writes them.
func marshalInput(command, responseFile string, args any, state json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, kv := range []struct {
		key   string
		value any
	}{{"command", command}, {"responseFile", responseFile}, {"args", args}, {"state", state}} {
		buf.WriteString([]string{"{", ","}[min(i, 1)] + `"` + kv.key + `":`)
		if err := enc.Encode(kv.value); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

// hookEnv is the hook's environment: r.Env with the job's prepend path
// (most recent first) before PATH, as the runner gives every process it
// starts on its host (Handlers/Handler.cs AddPrependPathToEnvironment).
func (r *Runner) hookEnv() []string {
	env := slices.Clone(r.Env)
	if len(r.PrependPath) == 0 {
		return env
	}
	prepend := slices.Clone(r.PrependPath)
	slices.Reverse(prepend)
	path := strings.Join(prepend, ":")
	for i, kv := range env {
		if old, ok := strings.CutPrefix(kv, "PATH="); ok {
			if old != "" {
				path += ":" + old
			}
			env = slices.Delete(env, i, i+1)
			break
		}
	}
	return append(env, "PATH="+path)
}

// exitCode is the hook's exit code as the runner sees it: .NET's
// Process.ExitCode on Unix is 128 + the signal for a process a signal
// ended (where Go reports -1).
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
