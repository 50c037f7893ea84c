package gitlab

import "runtime/debug"

// agentGCPercent is the agent's GOGC. The agent lives for a job with a
// small heap (a few MiB) and allocates much of it again each stage (the
// stage's request with the runner's environment, its settings, its
// session); at Go's default of 100 it collected every few stages, each
// collection costing CPU that the stage's own work waited for and fresh
// pages (page faults, 20–60 µs each on a virtual machine) afterwards.
// Four times the live heap stays within a few tens of MiB.
const agentGCPercent = 400

// tuneAgentGC sets the agent's GOGC to agentGCPercent, unless the
// environment sets GOGC itself.
func tuneAgentGC(env Env) {
	if env("GOGC") == "" {
		debug.SetGCPercent(agentGCPercent)
	}
}
