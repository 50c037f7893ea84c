// Package pool reads the pools file of warm pods: one YAML file holding
// one or more pools, each a name, the pod settings of the settings package
// under the keys of the run config (image, helper-image, cpu, memory,
// node-selector, toleration, volume, pull-secret, pod-patch, service, …),
// size (warm pods to keep ready) and max-idle (a warm pod older than that
// is replaced):
//
//	pools:
//	- name: small
//	  image: alpine:3
//	  size: 3
//	  max-idle: 30m
//	  cpu: 500m
//	  memory: 256Mi
//
// Every key is a flag of the FlagSet NewFlagSet returns, set with
// settings.ApplyValues, so a pool gives the messages `tether run` gives for
// the same key (unknown key, bad quantity, …). Load reads and validates the
// file; Pool.Spec is the kube.Spec a warm pod of the pool is built from.
//
// It imports settings and client/kube, never the controller, a command or
// an integration (deps_test.go).
package pool
