package server

import (
	"context"

	"github.com/agent-lsp/agent-lsp/server/session"
)

// MCPArgs are agent.mcp's arguments (none).
type MCPArgs struct{}

// MCPProject is one project's MCP servers in agent.mcp's result.
type MCPProject struct {
	Project string                  `json:"project"`
	Root    string                  `json:"root"`
	Servers []session.MCPServerInfo `json:"servers"`
}

func (s *Server) mcpCommand(ctx context.Context, call commandCall, _ MCPArgs) ([]MCPProject, error) {
	out := []MCPProject{}
	for _, p := range call.b.Workspace.Projects() {
		infos := call.b.MCP.Describe(ctx, p)
		if infos == nil {
			infos = []session.MCPServerInfo{}
		}
		out = append(out, MCPProject{Project: p.Name(), Root: p.Root(), Servers: infos})
	}
	return out, nil
}
