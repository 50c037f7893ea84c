// Package contract holds the strings that tie Tether's pieces together: the
// labels and annotation the clients put on what they create, the cleaner
// (`tether gc`) deletes by and the shim reads its time to live from, and the
// default helper image every backend and the CLI start from.
//
// It is a leaf package (it imports only the build's version, itself a leaf)
// so the shim, the public client packages and the cleaner can all import it;
// each string is defined here and nowhere else.
package contract

import (
	"strings"

	"github.com/tether-ci/tether/internal/version"
)

const (
	// LabelManagedBy is set to ManagedByValue on every object Tether
	// creates (pods, ConfigMaps, Secrets, containers, volumes). The cleaner
	// considers only objects with this label.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "tether"
	// LabelJob carries the job ID on every object Tether creates.
	LabelJob = "tether.dev/job"
	// AnnotationTTL is the pod annotation holding the pod's time to live in
	// whole seconds from its creation time. The shim reads it through the
	// downward API and ends itself; the cleaner deletes pods past it. The
	// name is the one the GitLab Kubernetes pod cleaner uses, so either
	// cleaner removes Tether's pods.
	AnnotationTTL = "cleaner.kubernetes.gitlab.org/ttl"
	// AnnotationGitLabPodCleanupTTL is the annotation GitLab's own pod
	// cleaner reads: a Go duration ("1h30m") from the pod's creation. The
	// cleaner honours it on pods without AnnotationTTL.
	AnnotationGitLabPodCleanupTTL = "pod-cleanup.gitlab.com/ttl"
	// AnnotationSafeToEvict is the Cluster Autoscaler's annotation: a
	// pod carrying it with SafeToEvictValue keeps its node from being
	// scaled down. Job pods carry it while their job runs.
	AnnotationSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	// SafeToEvictValue is AnnotationSafeToEvict's value on job pods.
	SafeToEvictValue = "false"
	// AnnotationDoNotDisrupt is Karpenter's annotation: a pod carrying it
	// with DoNotDisruptValue keeps Karpenter from consolidating, expiring
	// or draining its node voluntarily.
	AnnotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// DoNotDisruptValue is AnnotationDoNotDisrupt's value on job pods.
	DoNotDisruptValue = "true"
	// ShimImageRepository is where the project publishes the job-pod
	// image: tether-shim alone at /tether-shim (FROM scratch, user 65532),
	// for linux/amd64 and linux/arm64. Every job pod's init container
	// copies the shim out of it.
	ShimImageRepository = "ghcr.io/tether-ci/tether-shim"
	// CLIImageRepository is where the project publishes the image of the
	// tether CLI at /tether (the `tether gc` CronJob runs it).
	CLIImageRepository = "ghcr.io/tether-ci/tether"
	// DevImageTag tags the images of builds that are not releases.
	DevImageTag = "dev"
	// HeapPrefaultVar is the environment variable that, set to 0, keeps
	// the tether CLI from populating its heap's first chunk at its start
	// (internal/startgc): the bench compares both.
	HeapPrefaultVar = "TETHER_HEAP_PREFAULT"
)

// IsRelease reports whether v is a release version as `make release
// VERSION=...` accepts it: vMAJOR.MINOR.PATCH (numbers without leading
// zeros) with an optional pre-release of letters, digits, dots and hyphens
// (v1.2.0-rc.1) — but not what `git describe` adds between tags
// (-3-gabc1234) or -dirty. (No regexp: the shim imports this package and
// stays small.)
func IsRelease(v string) bool {
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return false
	}
	core, pre, hasPre := strings.Cut(rest, "-")
	nums := strings.Split(core, ".")
	if len(nums) != 3 {
		return false
	}
	for _, n := range nums {
		if n == "" || len(n) > 1 && n[0] == '0' || strings.Trim(n, "0123456789") != "" {
			return false
		}
	}
	if !hasPre {
		return true
	}
	if pre == "" || strings.Trim(pre, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-") != "" {
		return false
	}
	return !strings.HasSuffix(pre, "dirty") && !isDescribe(pre)
}

// isDescribe reports whether a pre-release ends like `git describe` output:
// -N-gHASH (commits since the tag, abbreviated commit).
func isDescribe(pre string) bool {
	parts := strings.Split(pre, "-")
	if len(parts) < 2 {
		return false
	}
	n, g := parts[len(parts)-2], parts[len(parts)-1]
	hash, ok := strings.CutPrefix(g, "g")
	return ok && n != "" && strings.Trim(n, "0123456789") == "" && len(hash) >= 4 && strings.Trim(hash, "0123456789abcdef") == ""
}

// ImageTag is the tag of the project's images that go with a binary of
// version v: v itself for a release, DevImageTag otherwise.
func ImageTag(v string) string {
	if IsRelease(v) {
		return v
	}
	return DevImageTag
}

// DefaultHelperImage is the image that carries tether-shim (at
// /tether-shim) when none is configured: ShimImageRepository tagged with
// this build's version (DevImageTag for builds that are not releases).
func DefaultHelperImage() string {
	return ShimImageRepository + ":" + ImageTag(version.Get())
}

// Defaults of tether-shim that clients size the pod's lifetime with: the
// TERM→KILL grace when a script is stopped (--grace), and the after-scripts'
// budget once the job's deadline stopped the main scripts (--after-timeout,
// GitLab's after_script timeout). In seconds, to keep this package free of
// imports.
const (
	DefaultGraceSeconds        = 10
	DefaultAfterTimeoutSeconds = 300
)

// Warm pods: pods of a pool, started before their jobs (`tether pool
// serve` creates them with client/kube's WarmPod) and claimed by a job
// (client/kube's Claim). These labels and annotations tie the controller,
// the claimers and the cleaner together.
const (
	// LabelPool carries the name of the pool a warm pod belongs to.
	LabelPool = "tether.dev/pool"
	// LabelPoolHash carries the hash of the pod settings the warm pod was
	// built from (client/kube's PoolHash): a job claims only a pod whose
	// hash equals its own settings' hash, and the controller replaces pods
	// whose hash is not the pool's current one.
	LabelPoolHash = "tether.dev/pool-hash"
	// LabelWarm is a warm pod's state: WarmStarting, WarmIdle or
	// WarmClaimed. Claimers list only WarmIdle pods; the controller
	// counts WarmStarting and WarmIdle pods as the pool's unclaimed ones.
	LabelWarm = "tether.dev/warm"
	// WarmStarting is LabelWarm of a warm pod whose shim has not answered
	// yet: no job may claim it.
	WarmStarting = "starting"
	// WarmIdle is LabelWarm of a warm pod that runs and whose shim
	// answered (its hello is in the container's log): a job may claim it.
	WarmIdle = "idle"
	// WarmClaimed is LabelWarm of a warm pod a job claimed: it serves that
	// job only and is deleted when the job ends. The controller no longer
	// counts it in its pool.
	WarmClaimed = "claimed"
	// AnnotationClaimedAt is when a job claimed the warm pod (RFC 3339
	// with nanoseconds, UTC). The job's ID is in LabelJob.
	AnnotationClaimedAt = "tether.dev/claimed-at"
)
