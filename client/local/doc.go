// Package local is Tether's local backend: tether-shim runs as a child
// process of the caller, and a Shim is the client.Transport that reaches it.
//
// The backend behaves like a Kubernetes attach: the shim's stdout is read
// continuously and forwarded to the current connection only; bytes the shim
// writes while no connection is attached are not buffered (they are lost to
// this transport, exactly as attach output while detached only reaches the
// container log). The shim keeps them for replay, so a session resumes
// without losing anything. Cut breaks the current connection on purpose.
//
// Config.MemoryReplay trades that fidelity for speed: the shim replays from
// its memory window instead of a spool file, and its output waits in the
// pipe while no connection is attached, so the window always covers what a
// new connection asks for. tether run --local uses it.
package local
