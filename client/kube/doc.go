// Package kube runs Tether jobs in Kubernetes pods and attaches to them.
//
// One pod per job (see docs/ARCHITECTURE.md, "Kubernetes pod layout"): an
// init container from the helper image copies tether-shim into an emptyDir,
// and the build container runs the job's image with the shim as its command,
// stdin open for attach. The scripts travel in a ConfigMap, the job's
// variables in a Secret (envFrom); both carry an ownerReference to the pod,
// so deleting the pod garbage-collects them.
//
// A runner uses it in a few steps (Example shows them with error handling):
//
//	cfg, ns, _ := kube.LoadConfig(kube.ConfigOptions{})           // kubectl's rules
//	objs, _ := kube.Build(kube.Spec{Namespace: ns, Image: "alpine:3", Scripts: scripts})
//	cs, _ := kubeapi.New(cfg)                                       // the API calls Tether makes
//	pod, _ := kube.Create(ctx, cs, objs, logger)                    // pod first, then owned objects
//	_ = pod.WaitRunning(ctx, kube.WaitOptions{})                    // logs events, fails fast
//	res, err := client.Run(ctx, pod.Transport(cfg, kube.TransportOptions{}), objs.Job, opts)
//	_ = pod.Delete(context.WithoutCancel(ctx))
//
// Transport implements client.Transport over the pods/attach subresource:
// WebSocket (the v5.channel.k8s.io subprotocol, with a small client of its
// own that reads the frames straight into the session's buffer) first,
// client-go's SPDY executor when the WebSocket upgrade fails, as kubectl
// does. Each Connect is one attach
// session; the client session re-attaches after a drop and resumes the
// shim's record stream, so nothing is lost or repeated. Transport is also a
// client.LogSource: when the container has already ended, the session reads
// the container's log (pods/log) instead, so a job that finished (or hit
// its deadline) while nobody was attached still reports its output and
// outcome.
//
// Watcher shares one pod informer and one event watch per namespace among
// all the jobs of a process (set it as Pod.Watcher; a runner calls
// Watcher.Watch before it creates a namespace's first pods, so their
// events need no list each); WaitRunning without one uses a Watcher of its
// own. Its memory is bounded: slim pods, and
// only the last minutes' events.
package kube
