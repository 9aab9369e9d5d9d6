package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// NoArgs is the argument object of a command that takes none.
type NoArgs struct{}

func (s *Server) projectsCommand(ctx context.Context, call commandCall, _ NoArgs) ([]workspace.Snapshot, error) {
	out := []workspace.Snapshot{}
	for _, p := range call.b.Workspace.Projects() {
		out = append(out, p.Snapshot())
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
	ws, st := call.b.Workspace, call.b.Store
	if _, ok := ws.Project(a.Project); !ok {
		return SwitchProjectResult{}, invalidParams("agent.switchProject: unknown project %q (projects: %s)", a.Project, strings.Join(ws.Names(), ", "))
	}
	if call.b.Runtime.Running(a.Session) {
		return SwitchProjectResult{}, invalidParams("agent.switchProject: session %s is running", a.Session)
	}
	sess, err := st.Session(ctx, a.Session)
	if errors.Is(err, store.ErrNotFound) {
		return SwitchProjectResult{}, sessionError("agent.switchProject", fmt.Errorf("%w %q", agent.ErrUnknownSession, a.Session))
	} else if err != nil {
		return SwitchProjectResult{}, sessionError("agent.switchProject", err)
	}
	sess.Project = a.Project
	if err := st.PutSession(ctx, sess); err != nil {
		return SwitchProjectResult{}, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.switchProject: %v", err)
	}
	return SwitchProjectResult{Session: sess.ID, Project: a.Project}, nil
}
