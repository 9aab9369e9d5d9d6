package server

import (
	"context"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// NoArgs is the argument object of a command that takes none.
type NoArgs struct{}

// ProjectInfo is one project of agent.projects: what detection found, its
// runtime context, how its commands are confined here, and what answers
// its language questions.
type ProjectInfo struct {
	workspace.Snapshot
	Sandbox  sandbox.Report  `json:"sandbox"`
	Language ProjectLanguage `json:"language"`
}

// ProjectLanguage says what answers a project's language questions (the
// diagnostics after edits and the symbol tools): the editor's own language
// features, or a language server agent-lsp starts.
type ProjectLanguage struct {
	By      string `json:"by"`                // "editor", "agent-lsp" or "none"
	Server  string `json:"server,omitempty"`  // agent-lsp's server, e.g. gopls
	Command string `json:"command,omitempty"` // its command line
	State   string `json:"state,omitempty"`   // not started, starting, ready, stopped, failed
	Note    string `json:"note,omitempty"`    // why there is none, or why it stopped
}

func (s *Server) projectsCommand(ctx context.Context, call commandCall, _ NoArgs) ([]ProjectInfo, error) {
	out := []ProjectInfo{}
	for _, p := range call.b.Workspace.Projects() {
		snap := p.Snapshot()
		policy := call.b.Confine.Policy(snap.Name, string(snap.Type), snap.Path)
		out = append(out, ProjectInfo{Snapshot: snap, Sandbox: call.b.Sandbox.Describe(policy), Language: s.projectLanguage(call.b, p)})
	}
	return out, nil
}

// projectLanguage is what answers p's language questions on this connection.
func (s *Server) projectLanguage(b *Backend, p *workspace.Project) ProjectLanguage {
	if s.life.answersLanguage() {
		return ProjectLanguage{By: "editor"}
	}
	if b.Lang == nil {
		return ProjectLanguage{By: "none"}
	}
	st := b.Lang.About(p)
	if st.State == "none" {
		return ProjectLanguage{By: "none", Note: st.Error}
	}
	return ProjectLanguage{By: "agent-lsp", Server: st.Name, Command: st.Command, State: st.State, Note: st.Error}
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
	if err := call.b.Live().SwitchProject(ctx, call.b.Runtime, a.Session, a.Project); err != nil {
		return SwitchProjectResult{}, sessionError("agent.switchProject", err)
	}
	return SwitchProjectResult(a), nil
}
