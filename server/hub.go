package server

import (
	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/store"
)

// Hub is what the connections of one process share (session.Hub): the
// store, the live sessions and the MCP pool.
type Hub = session.Hub

// NewHub returns a hub over st, the store at path, which it never closes;
// st nil makes a hub whose connections open their own store.
func NewHub(st store.Store, path string) *Hub { return session.NewHub(st, path) }

// Deliver queues one of a followed session's events (agent.Subscriber):
// through the connection's outbox, which never waits for it (a client
// without one, built by a test, sends it at once).
func (c *client) Deliver(raw []byte, e event.Event) {
	if c.box == nil {
		c.rawEvent(raw)
		return
	}
	_, end := e.Data.(event.RunEnd)
	c.box.rawEvent(raw, e.Session, e.Seq, end)
}
