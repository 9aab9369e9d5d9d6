package server

import (
	"context"

	"github.com/agent-lsp/agent-lsp/server/session"
)

// Slash commands are the core's (session.Backend.ExpandSlash and
// Commands); agent.commands lists them.

// CommandInfo is one slash command as agent.commands lists it.
type CommandInfo = session.CommandInfo

// Builtin is the built-in slash command prompt calls ("" for none): one
// agent-lsp answers itself, without the model (session.Builtin).
func Builtin(prompt string) string { return session.Builtin(prompt) }

// CommandsArgs are agent.commands' arguments.
type CommandsArgs struct {
	Project string `json:"project,omitempty"`
}

// CommandsResult is agent.commands' result.
type CommandsResult struct {
	Commands []CommandInfo `json:"commands"`
}

func (s *Server) commandsCommand(ctx context.Context, call commandCall, a CommandsArgs) (CommandsResult, error) {
	project, err := call.b.Runtime.ProjectOf(ctx, "", a.Project)
	if err != nil {
		return CommandsResult{}, sessionError("agent.commands", err)
	}
	list, err := call.b.Commands(project)
	if err != nil {
		return CommandsResult{}, sessionError("agent.commands", err)
	}
	return CommandsResult{Commands: list}, nil
}
