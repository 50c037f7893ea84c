// Package transfer is how files travel between the runner's disk and the
// job container over the attach stream, through the container's
// tether-shim.
//
// In: a Script is a job of the shim whose files ride along with it,
// staged in the shim's files directory (each one's size and sha256
// checked by the shim when it arrives), and whose POSIX sh wrapper puts
// them in place: single files (Deliver, DeliveryJob) and whole runner-host
// directory trees (Walk, Tree). Out: ListScript prints files in the
// container as a listing that ParseListing turns back into their bytes,
// checked by size and sha256.
//
// It builds jobs and parses their output; running them is the caller's
// (client.Run, kube.Run).
package transfer
