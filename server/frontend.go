package server

import (
	"context"
	"errors"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/workspace"
	"go.lsp.dev/jsonrpc2"
)

// This file is the core's face to the front ends other than the LSP
// server's own handlers (server/acp): what a front end may use of the
// backend beyond its exported fields. Each front end keeps only its wire
// types and its implementations of the ports (Ports): the editor, the
// permission questions and the events.

// WithDefaults fills the options left nil: os.Getenv, os.Environ, a Logf
// that discards, os.Exit and a hub of the connection's own.
func (o Options) WithDefaults() Options { return o.withDefaults() }

// The run's types are the core's (server/session); the names here keep the
// LSP adapter's code and its tests as they were.
type (
	RunSpec = session.RunSpec
	Ports   = session.Ports
)

// The answers to a permission question (session.AllowOnce...).
const (
	AllowOnce   = session.AllowOnce
	AllowAlways = session.AllowAlways
	Deny        = session.Deny
)

// core is what a run takes of b (session.Core).
func (b *Backend) core() session.Core {
	return session.Core{Settings: b.Settings, Rules: b.Rules, Runtime: b.Runtime, Store: b.Store, Live: b.hub.live}
}

// Live is the registry of the process's live sessions (the hub's, which
// every connection's backend shares): what runs now, and how to cancel it.
func (b *Backend) Live() *agent.Registry { return b.hub.live }

// askPermission is the LSP adapter's permission port: the question as
// window/showMessageRequest.
func (s *Server) askPermission(ctx context.Context, q session.PermissionQuestion) (string, error) {
	return s.client.showMessageRequest(ctx, msgWarning, q.Text, AllowOnce, AllowAlways, Deny)
}

// Filename is the path a file URI names on this platform (a string that is
// no file: URI is returned as it is).
func Filename(uri string) string { return filename(uri) }

// Decided is the workspace's decision on the path of edit fe: the one the
// edit carries when it is for its path, else the workspace's now.
func Decided(ws *workspace.Workspace, fe tools.FileEdit) (workspace.Decision, error) {
	return decided(ws, fe)
}

// ImageInputs are the images refs name, checked for the request command
// names in its errors (too large, not an image, unreadable).
func ImageInputs(command string, refs []ImageRef) ([]agent.ImageInput, error) {
	in, err := imageInputs(command, refs)
	if err != nil {
		var rpc *jsonrpc2.Error
		if errors.As(err, &rpc) {
			return nil, errors.New(rpc.Message)
		}
	}
	return in, err
}

// SlashInput is what a front end knows of a prompt that starts with /name.
type SlashInput struct {
	Project string
	Session string // "" for a session the store does not have yet
	Model   string // the model the session runs on now
	// SetModel makes the session's next prompts run on another model.
	SetModel func(ctx context.Context, name string) error
}

// SlashResult is what a slash command makes of a prompt: a built-in's
// Reply, or a file command's Prompt and how its run differs.
type SlashResult struct {
	Builtin bool
	Reply   string
	Prompt  string
	Model   string   // the command's model ("" keeps the run's)
	Review  bool     // edits need the user's confirmation (mode: review)
	Tools   []string // the run's tools (names or groups); nil: all
}

// ExpandSlash expands a prompt that starts with /name in in.Project; ok is
// false for any other prompt. SlashError tells the caller's errors (an
// unknown or broken command) from the others.
func (b *Backend) ExpandSlash(ctx context.Context, in SlashInput, prompt string) (res SlashResult, ok bool, err error) {
	si := slashInput{b: b, project: in.Project, session: in.Session, model: in.Model, setModel: in.SetModel}
	if NeedsKey(b.Settings.BaseURL, b.Settings.APIKey) {
		si.noKey = noKeyWords(b)
	}
	r, ok, err := expandSlash(ctx, si, prompt)
	return SlashResult{Builtin: r.builtin, Reply: r.reply, Prompt: r.prompt, Model: r.model, Review: r.review, Tools: r.tools}, ok, err
}

// SlashError tells whether err of ExpandSlash is the caller's (an unknown
// or broken command, a reference outside the project, an unknown project).
func SlashError(err error) bool { return slashError(err) }

// Commands are the slash commands of project, built-ins first.
func (b *Backend) Commands(project string) ([]CommandInfo, error) {
	list, _, err := listCommands(b, project)
	return list, err
}

// SetStoredModel switches stored session, which must not be running, to
// another model for its next runs.
func (b *Backend) SetStoredModel(ctx context.Context, session, name string) error {
	return storedModelSetter(b, session)(ctx, name)
}

// Run runs spec with the backend's settings, rules, runtime and store
// (session.Core.Run: the one place a run's agent request is built).
func (b *Backend) Run(ctx context.Context, spec RunSpec, p Ports) (agent.Result, error) {
	return b.core().Run(ctx, spec, p)
}
