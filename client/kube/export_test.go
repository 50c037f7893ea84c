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

// StartPredial is startPredial, for the external tests.
var StartPredial = startPredial

// UsePredial makes t's first WebSocket attach take p, as Claim does.
func UsePredial(t *Transport, p *predial) { t.predialed = p }

// ReleasePredial is p.release, for the external tests.
func ReleasePredial(p *predial) { p.release() }

// ReleasePredialAfter is p.releaseAfter, for the external tests.
func ReleasePredialAfter(p *predial, attached <-chan struct{}) { p.releaseAfter(attached) }
