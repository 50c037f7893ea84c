// Package gc implements `tether gc`, the scheduled cleaner of Tether's
// leftovers.
//
// It deletes two kinds of leftovers, and nothing else:
//
//   - pods carrying the [TTLAnnotation] whose creation time plus that many
//     seconds has passed, whatever their phase (see [DecideTTL]);
//   - ConfigMaps and Secrets labelled [ManagedByLabel]=[ManagedByValue] that
//     have no live owner pod and are older than a grace period — leaks from a
//     runner that crashed before the ownerReference existed (see [DecideOrphan]).
//
// Every delete carries a UID precondition, so an object recreated under the
// same name is never deleted by mistake. Lists are paginated so a namespace
// with many pods is processed page by page.
package gc
