package kube

// MarkStarted marks t as Pod.Transport does after WaitRunning saw the
// container start.
func MarkStarted(t *Transport) { t.started.Store(true) }
