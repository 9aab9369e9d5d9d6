package server

import (
	"context"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// NoArgs is the argument object of a command that takes none.
type NoArgs struct{}

// ProjectInfo is one project of agent.projects: what detection found, its
// runtime context, and how its commands are confined here.
type ProjectInfo struct {
	workspace.Snapshot
	Sandbox sandbox.Report `json:"sandbox"`
}

func (s *Server) projectsCommand(ctx context.Context, call commandCall, _ NoArgs) ([]ProjectInfo, error) {
	out := []ProjectInfo{}
	for _, p := range call.b.Workspace.Projects() {
		snap := p.Snapshot()
		policy := call.b.Confine.Policy(snap.Name, string(snap.Type), snap.Path)
		out = append(out, ProjectInfo{Snapshot: snap, Sandbox: call.b.Sandbox.Describe(policy)})
	}
	return out, nil
}

// SwitchProjectArgs are agent.switchProject's arguments.
type SwitchProjectArgs struct {
	Session string `json:"session" required:"true"`
	Project string `json:"project" required:"true"`
}

// SwitchProjectResult is agent.switchProject's result.
type SwitchProjectResult struct {
	Session string `json:"session"`
	Project string `json:"project"`
}

func (s *Server) switchProjectCommand(ctx context.Context, call commandCall, a SwitchProjectArgs) (SwitchProjectResult, error) {
	if err := call.b.Runtime.SwitchProject(ctx, a.Session, a.Project); err != nil {
		return SwitchProjectResult{}, sessionError("agent.switchProject", err)
	}
	return SwitchProjectResult(a), nil
}
