// Package local is Tether's local backend: tether-shim runs as a child
// process of the caller, and a Shim is the client.Transport that reaches it.
//
// The backend behaves like a Kubernetes attach: the shim's stdout is read
// continuously and forwarded to the current connection only; bytes the shim
// writes while no connection is attached are not buffered (they are lost to
// this transport, exactly as attach output while detached only reaches the
// container log). The shim keeps them for replay, so a session resumes
// without losing anything. Cut breaks the current connection on purpose.
package local
