// Package poolctl is the controller of warm pods, `tether pool serve`: it
// keeps every pool of the pools file (internal/pool) at its size of
// unclaimed warm pods in one namespace.
//
// One replica leads at a time (client-go leader election on a Lease,
// Options.LeaseName): only the leader creates or deletes pods, so two
// replicas never both refill a pool. The leader watches the pools' pods
// through a label-selected shared informer (pods labelled
// contract.LabelPool), so a claim (a pod relabelled
// contract.WarmClaimed) starts its replacement at once. It counts the pods
// it asked for and has not seen yet (expectations, as the ReplicaSet
// controller does), so a pool never has more than its size of starting
// and idle pods, and waits for its cache before it counts at all, so a
// new leader sees what the last one created.
//
// Per pool it deletes idle pods whose settings hash is not the pool's
// (the settings changed), that are older than max-idle, that ended, or
// that cannot start (a bad image): claimed pods are never touched, and
// every delete carries the pod's UID and resourceVersion, so a pod claimed
// meanwhile is left alone. Idle pods of a pool that is no longer in the
// file are deleted. A pod that runs is made claimable with
// kube.MarkWarmReady once its shim answered. When it cannot create pods
// (a ResourceQuota, an admission webhook) it backs off exponentially and
// says why in a Warning Event on its Lease; it records Events on the
// pool's pods (created, claimed, replaced and why) and Prometheus metrics
// (Metrics).
//
// It imports internal/pool, client/kube, internal/contract and client-go;
// never a command or an integration (deps_test.go).
package poolctl
