// Package contract holds the strings that tie Tether's pieces together: the
// labels and annotation the clients put on what they create, the cleaner
// (`tether gc`) deletes by and the shim reads its time to live from, and the
// default helper image every backend and the CLI start from.
//
// It is a leaf package (standard library only, no imports at all) so the
// shim, the public client packages and the cleaner can all import it; each
// string is defined here and nowhere else.
package contract

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
	// DefaultHelperImage is the image that carries tether-shim (at
	// /tether-shim) when none is configured.
	DefaultHelperImage = "localhost/tether/helper:dev"
)

// Defaults of tether-shim that clients size the pod's lifetime with: the
// TERM→KILL grace when a script is stopped (--grace), and the after-scripts'
// budget once the job's deadline stopped the main scripts (--after-timeout,
// GitLab's after_script timeout). In seconds, to keep this package free of
// imports.
const (
	DefaultGraceSeconds        = 10
	DefaultAfterTimeoutSeconds = 300
)
