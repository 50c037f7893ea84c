package kube

// ActivityFile is the file on the pod's tether emptyDir that the build and
// helper containers' shims share (tether-shim --activity-file): each marks
// it while a client reaches it or a script runs, and each one's idle
// timeout also counts the other's marks. A stage in the helper container
// (an artifact upload, say) can run longer than the idle timeout while the
// build container's shim hears nothing; without the shared clock that
// shim would end, and with it the pod and the upload.
const ActivityFile = "/tether/activity"

// activityArgs are the shim arguments for the shared idle clock: only a
// pod with two shims (Spec.Helper) and an idle timeout needs one.
func activityArgs(s Spec) []string {
	if s.Helper == nil || s.IdleTimeout <= 0 {
		return nil
	}
	return []string{"--activity-file=" + ActivityFile}
}
