// Package daemon shares one session store among every editor window, the
// command line and CI runs of a user, as gopls's -remote=auto shares its
// cache: the agent-lsp an editor starts is a thin forwarder (Forward) to a
// per-user daemon (Daemon) that owns the store, which the forwarder starts
// when none runs.
//
// A daemon records its address in a sidecar file next to its store
// (<store>.daemon), so every process that uses the same store file finds it
// whatever its environment. Liveness is decided by connecting, never by a
// pid: a killed daemon's abstract socket is gone even while its process
// lingers as a zombie. Starting is serialized by a lock file
// (<store>.daemon.lock), so forwarders starting at once end up with one
// daemon.
//
// A connection begins with a handshake: one JSON line each way (Hello, then
// Welcome). A "serve" connection then carries the editor's LSP stream
// unchanged, and the daemon serves it with the connection's own environment,
// working directory and flags; the daemon has no environment of its own.
package daemon
