// Package session is the core both front ends share, in no protocol's
// terms: the Backend of a connection (its immutable Options, workspace,
// store and runtime; NewBackend, Reconfigure) and the Hub the process's
// connections share, a run as a front end asks for it (RunSpec), the ports
// a front end implements for it (Ports), the permission policy and the
// user's "always" answers (Allowances), the slash commands, and Run, the
// one place a run's agent request is built.
//
// The LSP adapter (package server) and the ACP adapter (server/acp) keep
// only their wire types and their implementations of the ports: how events,
// edits and permission questions reach their client.
package session

import (
	"cmp"
	"context"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/shellrule"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/store"
)

// RunSpec is a run as a front end asks for it, in no protocol's terms: the
// agent's request as the front end mapped its wire type to it (prompt,
// session, project, attachments, images, model, output schema, edit mode)
// and the per-run options the settings give defaults for. Adding a per-run
// option adds a field here, its use in Core.Run, and its mapping in each
// front end's wire type (docs/architecture.md).
type RunSpec struct {
	agent.Request
	// Resume continues the session's interrupted run (agent.resume)
	// instead of running a prompt.
	Resume bool
	// Durability is the run's; "": the settings' (the daemon's store is
	// shared: each connection's setting applies to its runs).
	Durability store.Durability
}

// Ports are what a front end implements for a run: how its events, its
// edits and its permission questions reach the user.
type Ports struct {
	Events func(event.Event)
	Editor tools.Editor
	// Language is the editor's language intelligence; nil: the language
	// servers agent-lsp starts (the backend's) answer.
	Language tools.Language
	Ask      PermissionAsker
	Always   *Allowances // the connection's "always" answers
	// Before sends the run's queued events before a question, so that the
	// question follows what led to it.
	Before func()
}

// Core is what a run takes of a connection's backend: its settings (never
// changed: a settings change makes a new backend, hence a new Core), the
// settings' parsed command rules, the runtime (a stateless executor), the
// store, and the process's registry of live sessions, which the core owns
// and every connection's runtime shares (agent.Registry: it begins runs,
// cancels them and sends a prompt to a running one). Core holds no state
// of its own, so a value is as good as a pointer.
type Core struct {
	Settings config.Settings
	Rules    shellrule.Set
	Runtime  *agent.Runtime
	Store    store.Store
	Live     *agent.Registry
}

// defaultMode is the mode of a run that names none: its session's, else
// the setting's.
func (c Core) defaultMode(ctx context.Context, session string) agent.Mode {
	if session != "" {
		if s, err := c.Store.Session(ctx, session); err == nil && s.Mode != "" {
			return agent.Mode(s.Mode)
		}
	}
	return agent.Mode(c.Settings.Mode)
}

// Run is the one place a front end's run is wired to the runtime: it
// builds the agent request from spec, the settings and the front end's
// ports, and runs it (or queues its prompt into the session's live run).
func (c Core) Run(ctx context.Context, spec RunSpec, p Ports) (agent.Result, error) {
	req := spec.Request
	req.Events, req.Editor, req.Language = p.Events, p.Editor, p.Language
	req.Permissions = &permissions{rules: c.Rules, tools: newToolRules(c.Settings.Allow, c.Settings.Deny), always: p.Always,
		ask: p.Ask, interactive: c.Settings.Interactive, before: p.Before}
	req.MaxSteps = c.Settings.MaxSteps
	req.Durability = cmp.Or(spec.Durability, c.Settings.Durability)
	req.Limits.MaxTokens = cmp.Or(req.Limits.MaxTokens, c.Settings.MaxTokens)
	req.Limits.MaxCost = cmp.Or(req.Limits.MaxCost, c.Settings.MaxCost)
	if req.Mode == "" && c.Settings.Mode != string(agent.ModeAgent) {
		req.Mode = c.defaultMode(ctx, req.Session)
	}
	if spec.Resume {
		return c.Live.Resume(ctx, c.Runtime, req)
	}
	return c.Live.Run(ctx, c.Runtime, req)
}
