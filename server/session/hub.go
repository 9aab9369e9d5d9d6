package session

import (
	"fmt"
	"path/filepath"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/store/postgres"
)

// Hub is what the connections of one process share: in the daemon, every
// window's connection, LSP and ACP alike. It holds the store they all use,
// the registry of live sessions (agent.Registry: the sessions running in
// any of them, one event sequence per session, and the connections that
// follow each: the run's own and those that queued a prompt into it) and
// the MCP pool. A connection without a hub has its own and opens the store
// its settings name.
type Hub struct {
	store     store.Store     // nil: each connection opens the store its settings name
	storePath string          // the file of store
	live      *agent.Registry // the live sessions of every connection, their event sequences and followers
	mcp       MCPPool         // MCP servers, shared by connections that define them alike
}

// NewHub returns a hub over st, the store at path, which it never closes;
// st nil makes a hub whose connections open their own store.
func NewHub(st store.Store, path string) *Hub {
	abs, err := filepath.Abs(path)
	if err != nil || postgres.IsURL(path) {
		abs = path
	}
	return &Hub{store: st, storePath: abs, live: agent.NewRegistry()}
}

// Running is how many sessions run now, in all connections.
func (h *Hub) Running() int { return h.live.Count() }

// Live is the registry of the sessions running in the hub's connections.
func (h *Hub) Live() *agent.Registry { return h.live }

// sharedStore returns the hub's store for settings that name path, or nil
// when the hub has none; an error when the hub serves another file.
func (h *Hub) sharedStore(path string) (store.Store, error) {
	if h.store == nil {
		return nil, nil
	}
	if postgres.IsURL(path) {
		if path != h.storePath {
			return nil, fmt.Errorf("this agent-lsp process serves the store %s, not %s", postgres.Redact(h.storePath), postgres.Redact(path))
		}
		return h.store, nil
	}
	if abs, err := filepath.Abs(path); err != nil || abs != h.storePath {
		return nil, fmt.Errorf("this agent-lsp daemon serves the store %s, not %s", h.storePath, path)
	}
	return h.store, nil
}
