package server

import (
	"cmp"
	"context"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
)

// RunSpec is a run as a front end asks for it, in no protocol's terms: the
// agent's request as the front end mapped its wire type to it (prompt,
// session, project, attachments, images, model, output schema, edit mode)
// and the per-run options the settings give defaults for. Adding a per-run
// option adds a field here, its use in Backend.run, and its mapping in each
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
	// servers agent-lsp starts (Backend.Lang) answer.
	Language tools.Language
	Ask      permissionAsker
	Always   *allowances // the connection's "always" answers
	// Before sends the run's queued events before a question, so that the
	// question follows what led to it.
	Before func()
}

// run is the one place a front end's run is wired to the runtime: it
// builds the agent request from spec, the backend's settings and the
// front end's ports, and runs it (or queues its prompt into the session's
// live run).
func (b *Backend) run(ctx context.Context, spec RunSpec, p Ports) (agent.Result, error) {
	req := spec.Request
	req.Events, req.Editor, req.Language = p.Events, p.Editor, p.Language
	req.Permissions = &permissions{rules: b.Rules, tools: newToolRules(b.Settings.Allow, b.Settings.Deny), always: p.Always,
		ask: p.Ask, interactive: b.Settings.Interactive, before: p.Before}
	req.MaxSteps = b.Settings.MaxSteps
	req.Durability = cmp.Or(spec.Durability, b.Settings.Durability)
	if spec.Resume {
		return b.Runtime.Resume(ctx, req)
	}
	return b.Runtime.Run(ctx, req)
}
