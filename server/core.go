package server

import (
	"context"

	"github.com/agent-lsp/agent-lsp/server/session"
)

// The LSP adapter is a thin layer over the core's backend (server/session):
// the names here keep its code and its tests as they were.
type (
	// Backend is the connection's settings, workspace, store and runtime
	// (session.Backend).
	Backend = session.Backend
	// Folder is one workspace folder as the editor names it.
	Folder = session.Folder
	// RunSpec is a run as the LSP adapter asks for it (session.RunSpec).
	RunSpec = session.RunSpec
	// Ports are the LSP adapter's editor, permissions and events for a run.
	Ports = session.Ports
)

// The answers to a permission question (session.AllowOnce...).
const (
	AllowOnce   = session.AllowOnce
	AllowAlways = session.AllowAlways
	Deny        = session.Deny
)

// askPermission is the LSP adapter's permission port: the question as
// window/showMessageRequest.
func (s *Server) askPermission(ctx context.Context, q session.PermissionQuestion) (string, error) {
	return s.client.showMessageRequest(ctx, msgWarning, q.Text, AllowOnce, AllowAlways, Deny)
}
