package gitlab

import (
	"time"

	gitlab "github.com/tether-ci/tether/integration/gitlab/internal/runnerapi"
)

// jobResponse is the job response (JOB_RESPONSE_FILE) the agent parsed
// for a stage, kept for the job's next stages: the runner writes it once,
// before prepare, and it holds every variable of the job, so parsing it
// again each stage is most of a stage's own work in the agent.
type jobResponse struct {
	stamp fileStamp
	job   *gitlab.Job
}

// readJob is gitlab.ReadJob for one of the job's stages: the previous
// stage's job when the file is the same one with the same size and
// modification time, written long enough ago (freshConfig) not to be
// changing still. Called by one stage at a time; the job returned is
// read only.
func (a *agent) readJob(env Env) (*gitlab.Job, error) {
	path := env("JOB_RESPONSE_FILE")
	if path == "" {
		return gitlab.ReadJob(env) // its error says what is missing
	}
	// The stamp is taken before the read: a file written meanwhile has
	// another stamp next time, and is read again.
	stamp := stampOf(path)
	if p := a.job; p != nil && stamp.ok && p.stamp == stamp {
		return p.job, nil
	}
	j, err := gitlab.ReadJob(env)
	if err != nil || !stamp.ok || time.Since(stamp.modTime) < freshConfig {
		a.job = nil
		return j, err
	}
	a.job = &jobResponse{stamp: stamp, job: j}
	return j, nil
}
