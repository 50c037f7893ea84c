package kube

// MarkStarted marks t as Pod.Transport does after WaitRunning saw the
// container start.
func MarkStarted(t *Transport) { t.started.Store(true) }

// CASClientset is casClientset, for the external tests.
var CASClientset = casClientset

// WarmRunning is warmRunning, for the external tests.
var WarmRunning = warmRunning

// PoolSpec is poolSpec, for the external tests.
var PoolSpec = poolSpec
