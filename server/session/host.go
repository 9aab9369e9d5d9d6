package session

import (
	"os"

	"github.com/agent-lsp/agent-lsp/server/config"
)

// Host is what the process gives a front end's connection (LSP's Serve,
// ACP's Serve): the settings of its command line, its environment, its log
// and the hub it shares with the process's other connections.
type Host struct {
	// Flags are the settings given as flags; they win over initializationOptions.
	Flags *config.Flags
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Environ lists the environment commands start from (scrubbed of
	// credentials); nil means os.Environ.
	Environ func() []string
	// Logf writes a log line to stderr; nil discards.
	Logf func(format string, args ...any)
	// Exit is called when the parent process named in initialize dies; nil means os.Exit.
	Exit func(code int)
	// Hub is what this connection shares with others of the process (the
	// daemon's store and running sessions); nil: its own.
	Hub *Hub
	// Notices are problems the user must hear of once the client is
	// initialized (window/showMessage): the daemon could not be used, say.
	Notices []string
	// Version is agent-lsp's, as clients and MCP servers are told it;
	// "": the LSP server's own (server.Version), "unknown" for ACP's.
	Version string
}

// WithDefaults fills the options left nil: os.Getenv, os.Environ, a Logf
// that discards, os.Exit and a hub of the connection's own.
func (o Host) WithDefaults() Host {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Environ == nil {
		o.Environ = os.Environ
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Exit == nil {
		o.Exit = os.Exit
	}
	if o.Hub == nil {
		o.Hub = NewHub(nil, "")
	}
	return o
}
