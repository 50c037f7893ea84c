package contract

// Events of warm pods: the pools' controller (`tether pool serve`) and
// the claimers record them, `tether pool status` counts them. Each
// carries the pool's name in the annotation LabelPool.
const (
	// EventWarmClaimed is the reason of the Event on a warm pod a job
	// claimed.
	EventWarmClaimed = "WarmPodClaimed"
	// EventWarmMiss is the reason of an Event a claimer records when a job
	// asked a pool for a warm pod and cold-started instead; the annotation
	// AnnotationMissReason says why.
	EventWarmMiss = "WarmPodMiss"
	// AnnotationMissReason is the reason of a miss on its Event:
	// client/kube's MissReason ("empty", "settings", "race", "api"), or
	// "options" from tether actions (the workflow's container options or
	// the hook template shape the job's pod beyond any pool's).
	AnnotationMissReason = "tether.dev/miss-reason"
)
