package session

import (
	"context"
	"path/filepath"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Asker asks the user to choose one of actions ("" when dismissed): a
// front end's window/showMessageRequest or session/request_permission.
type Asker func(ctx context.Context, message string, actions ...string) (string, error)

// Sources is what the MCP and hook sources of a backend are made of: its
// settings, workspace and environment, the store that keeps approvals, how
// the user is asked (nil: never; a run that cannot ask denies) and told,
// and how commands are confined.
type Sources struct {
	Settings  config.Settings
	Workspace *workspace.Workspace
	Getenv    func(string) string
	Env       []string // the clean command environment servers and hooks start from
	Approvals store.Approvals
	Ask       Asker
	Log       func(string)
	Sandbox   *sandbox.Sandbox
	Confine   sandbox.Settings
}

// NewMCPSource is the MCP servers of the settings for the projects of the
// workspace, sharing managers through pool; version is agent-lsp's, as the
// servers are told it.
func NewMCPSource(s Sources, pool *MCPPool, version string) *MCPSource {
	return &MCPSource{settings: s.Settings, ws: s.Workspace, getenv: s.Getenv, env: s.Env, approvals: s.Approvals, ask: s.Ask,
		log: s.Log, sandbox: s.Sandbox, confine: s.Confine, pool: pool, version: version}
}

// NewHookSource is the hooks of the settings for the projects of the
// workspace.
func NewHookSource(s Sources) *HookSource {
	return &HookSource{settings: s.Settings, ws: s.Workspace, getenv: s.Getenv, env: s.Env, approvals: s.Approvals, ask: s.Ask,
		log: s.Log, sandbox: s.Sandbox, confine: s.Confine}
}

// UserDir is the user's agent-lsp configuration folder: under
// $XDG_CONFIG_HOME, else ~/.config; "" when neither is known.
func UserDir(getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "agent-lsp")
	}
	if home := getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".config", "agent-lsp")
	}
	return ""
}
