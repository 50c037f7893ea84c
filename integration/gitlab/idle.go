package gitlab

import "time"

// gitlabIdleTimeout is the default idle-timeout of `tether gitlab`: how
// long a job pod waits for its next stage before it ends itself, which is
// how soon a pod whose runner died mid-job (SIGKILL, a lost node) goes
// after its running stage ends. The runner runs a job's stages back to
// back, each a new `tether gitlab run` process that reaches the pod in
// well under a second; what can keep it away longer (docs/gitlab.md,
// "When a job's runner dies") is its own retry of a failed stage (up to
// 5 minutes of back-off between attempts in recent runners) and an API
// server that cannot be reached (a stage's process retries it for
// client.DefaultReconnectTimeout). The default covers both plus a minute.
const gitlabIdleTimeout = 8 * time.Minute
