package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/transcript"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// RunArgs are agent.run's arguments.
type RunArgs struct {
	Prompt string `json:"prompt"` // required unless retry
	// Retry rewinds the session's conversation to before its last prompt
	// and sends that prompt again (docs/rewind.md); Prompt is then not given.
	Retry      bool             `json:"retry,omitzero"`
	Project    string           `json:"project,omitempty"`
	Session    string           `json:"session,omitempty"`
	URI        string           `json:"uri,omitempty"`
	Range      *workspace.Range `json:"range,omitempty"`
	Edits      string           `json:"edits,omitempty"`
	Durability string           `json:"durability,omitempty"`
	Model      string           `json:"model,omitempty"`
	Context    []ContextRef     `json:"context,omitempty"`
	Images     []ImageRef       `json:"images,omitempty"`
	// OutputSchema is a JSON Schema (an object) the final answer must be
	// valid against: sent as response_format where the endpoint takes it.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Mode is agent, plan or ask ("": the session's, else the setting's).
	Mode string `json:"mode,omitempty"`
	// MaxTokens and MaxCost (USD) bound what the run spends (0: the
	// settings').
	MaxTokens int     `json:"maxTokens,omitempty"`
	MaxCost   float64 `json:"maxCost,omitempty"`
	// Isolation "worktree" runs the prompt in a git worktree of the
	// project's HEAD on a branch of its own (docs/worktrees.md).
	Isolation string `json:"isolation,omitempty"`
}

// budget is a run's mode and limits as agent.run and agent.resume give them.
type budget struct {
	mode      string
	maxTokens int
	maxCost   float64
}

func (b budget) validate() error {
	if _, err := agent.ParseMode(b.mode); err != nil {
		return err
	}
	if b.maxTokens < 0 || b.maxCost < 0 {
		return fmt.Errorf("maxTokens and maxCost must not be negative")
	}
	return nil
}

// set puts the run's mode and limits into req.
func (b budget) set(req *agent.Request) {
	req.Mode, req.Limits = agent.Mode(b.mode), agent.Limits{MaxTokens: b.maxTokens, MaxCost: b.maxCost}
}

// ContextRef is a document, or a range of it, the user attached to a
// prompt (#buffer, #selection, a file): the server reads it as the editor
// has it.
type ContextRef struct {
	URI   string           `json:"uri" required:"true"`
	Range *workspace.Range `json:"range,omitempty"`
}

// ResumeArgs are agent.resume's arguments.
type ResumeArgs struct {
	Session    string `json:"session" required:"true"`
	Edits      string `json:"edits,omitempty"`
	Durability string `json:"durability,omitempty"`
	Model      string `json:"model,omitempty"`
	// OutputSchema, Mode, MaxTokens, MaxCost: as agent.run's.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Mode         string          `json:"mode,omitempty"`
	MaxTokens    int             `json:"maxTokens,omitempty"`
	MaxCost      float64         `json:"maxCost,omitempty"`
}

// runOptions are the arguments agent.run and agent.resume share.
type runOptions struct {
	edits, durability string
	schema            json.RawMessage
}

func (o runOptions) validate() error {
	if len(o.schema) > 0 && (o.schema[0] != '{' || !json.Valid(o.schema)) {
		return fmt.Errorf("outputSchema must be a JSON Schema object")
	}
	if o.edits != "" && !slices.Contains([]string{"apply", "review"}, o.edits) {
		return fmt.Errorf("edits must be \"apply\" or \"review\", not %q", o.edits)
	}
	if o.durability != "" {
		if _, err := store.ParseDurability(o.durability); err != nil {
			return err
		}
	}
	return nil
}

func (a RunArgs) validate() error {
	if strings.TrimSpace(a.Prompt) == "" && !a.Retry {
		return errors.New("missing required argument \"prompt\"")
	}
	if a.Retry && (a.Session == "" || a.Prompt != "") {
		return errors.New("retry needs a session and no prompt")
	}
	return errors.Join(runOptions{a.Edits, a.Durability, a.OutputSchema}.validate(), a.budget().validate(), agent.CheckIsolation(a.Isolation))
}
func (a ResumeArgs) validate() error {
	return errors.Join(runOptions{a.Edits, a.Durability, a.OutputSchema}.validate(), a.budget().validate())
}
func (a RunArgs) budget() budget    { return budget{a.Mode, a.MaxTokens, a.MaxCost} }
func (a ResumeArgs) budget() budget { return budget{a.Mode, a.MaxTokens, a.MaxCost} }

func (s *Server) runCommand(ctx context.Context, call commandCall, a RunArgs) (agent.Result, error) {
	req := agent.Request{Session: a.Session, Project: a.Project, Prompt: a.Prompt, Model: a.Model, OutputSchema: a.OutputSchema, Retry: a.Retry, Isolation: a.Isolation}
	a.budget().set(&req)
	if a.URI != "" && a.Range != nil {
		req.Selection = &agent.Selection{Path: filename(a.URI), Range: *a.Range}
	}
	for i, c := range a.Context {
		if c.URI == "" {
			return agent.Result{}, invalidParams("agent.run: context[%d] has no uri", i)
		}
		req.Context = append(req.Context, agent.Attachment{Path: filename(c.URI), Range: c.Range})
	}
	o := runOptions{edits: a.Edits, durability: a.Durability}
	if res, done, err := s.slash(ctx, call.b, &req, &o); done || err != nil {
		return res, err // a built-in answers without the model: no key needed
	}
	if err := s.checkKey(call.b, "agent.run"); err != nil {
		return agent.Result{}, err
	}
	if err := s.checkModel(ctx, call.b, "agent.run", a.Model); err != nil {
		return agent.Result{}, err
	}
	var err error
	if req.Images, err = imageInputs("agent.run", a.Images); err != nil {
		return agent.Result{}, err
	}
	title := "agent: " + cmp.Or(transcript.FirstWords(a.Prompt, 6), "retry")
	return s.startRun(ctx, call, "agent.run", title, o, RunSpec{Request: req})
}

// slash expands a prompt that starts with /name (Backend.ExpandSlash): a
// built-in's reply is the result at once (done), without a run; a file
// command's prompt, model, tools and mode go into req and o. An agent.run
// that names a model or an edit mode keeps it.
func (s *Server) slash(ctx context.Context, b *Backend, req *agent.Request, o *runOptions) (agent.Result, bool, error) {
	project, err := b.Runtime.ProjectOf(ctx, req.Session, req.Project)
	if err != nil {
		return agent.Result{}, false, sessionError("agent.run", err)
	}
	in := session.SlashInput{Project: project, Session: req.Session, Model: cmp.Or(req.Model, b.Settings.Model),
		NeedsKey: s.keys.needsKey(b.Settings.BaseURL, b.Settings.APIKey)}
	if req.Session != "" {
		if sess, err := b.Store.Session(ctx, req.Session); err == nil {
			in.Model = cmp.Or(req.Model, sess.Model, b.Settings.Model)
			in.SetModel = func(ctx context.Context, name string) error { return b.SetStoredModel(ctx, req.Session, name) }
		}
	}
	res, ok, err := b.ExpandSlash(ctx, in, req.Prompt)
	switch {
	case !ok:
		return agent.Result{}, false, nil
	case err != nil:
		return agent.Result{}, false, sessionError("agent.run", err)
	case res.Builtin:
		return agent.Result{Session: req.Session, Status: store.StatusDone, Reply: res.Reply}, true, nil
	}
	req.Title, req.Prompt, req.Tools = req.Prompt, res.Prompt, res.Tools
	if req.Model == "" {
		req.Model = res.Model
	}
	if res.Review && o.edits == "" {
		o.edits = "review"
	}
	return agent.Result{}, false, nil
}

func (s *Server) resumeCommand(ctx context.Context, call commandCall, a ResumeArgs) (agent.Result, error) {
	req := agent.Request{Session: a.Session, Model: a.Model, OutputSchema: a.OutputSchema}
	a.budget().set(&req)
	if err := s.checkKey(call.b, "agent.resume"); err != nil {
		return agent.Result{}, err
	}
	if err := s.checkModel(ctx, call.b, "agent.resume", a.Model); err != nil {
		return agent.Result{}, err
	}
	return s.startRun(ctx, call, "agent.resume", "agent: resume "+a.Session, runOptions{edits: a.Edits, durability: a.Durability}, RunSpec{Request: req, Resume: true})
}

// startRun runs one agent.run or agent.resume: asynchronously (later messages
// are handled meanwhile), with progress and events, the editor and permission
// ports, and three ways to cancel it.
func (s *Server) startRun(ctx context.Context, call commandCall, command, title string, o runOptions, spec RunSpec) (agent.Result, error) {
	jsonrpc2.Async(ctx)
	s.runs.Add(1)
	defer s.runs.Done()
	runCtx, cancel := context.WithCancel(jsonrpc2.DetachContext(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel) // the request's context ends with the connection
	defer stop()
	c := s.requests.add(call.id, cancel)
	token := s.progressToken(runCtx, call)
	defer s.requests.remove(call.id, token)
	if token != nil {
		s.requests.setToken(token, c)
	}
	k := newReporter(s.client, s.opts.Hub, token, title)
	settings := call.b.Settings
	review := settings.Edits == "review"
	if o.edits != "" {
		review = o.edits == "review"
	}
	spec.Durability = store.Durability(o.durability)
	ports := Ports{Events: k.event, Ask: s.askPermission, Always: &s.always, Before: k.flush,
		Editor: &editor{c: s.client, ws: call.b.Workspace, review: review, allowEdit: call.b.AllowEdit, before: k.flush, saves: s.life.canSave(), line: &s.reviews}}
	if s.life.answersLanguage() { // the editor's language features answer, else the servers agent-lsp starts
		ports.Language = &editorLanguage{c: s.client, ws: call.b.Workspace, wait: time.Duration(settings.DiagnosticsWait) * time.Millisecond, before: k.flush}
	}
	if spec.Session != "" && call.b.Live().Running(spec.Session) {
		// Likely queued into a run of another window: follow the session
		// from now on, so that this window sees its prompt queued.
		s.opts.Hub.Live().Follow(spec.Session, s.client)
	}
	res, err := call.b.Run(runCtx, spec, ports)
	if err != nil {
		k.close("failed: " + err.Error())
		return agent.Result{}, sessionError(command, err)
	}
	if res.Status == agent.StatusQueued {
		k.close(fmt.Sprintf("queued for the running session (position %d)", res.Position))
		s.opts.Hub.Live().Follow(res.Session, s.client) // its run may be another window's
		return res, nil
	}
	s.learn(call.b, &res)
	k.close("")
	if s.requests.cancelledByRequest(c) && res.Status == store.StatusCancelled {
		return agent.Result{}, jsonrpc2.Errorf(RequestCancelled, "%s cancelled by $/cancelRequest (session %s, status cancelled)", command, res.Session)
	}
	return res, nil
}

// progressToken is the token the run reports progress on: the client's
// workDoneToken, else one the server creates when the client supports
// progress, else nil.
func (s *Server) progressToken(ctx context.Context, call commandCall) protocol.ProgressToken {
	if call.token != nil {
		return call.token
	}
	if _, progress := s.life.get(); !progress {
		return nil
	}
	token := protocol.String(fmt.Sprintf("agent-lsp-%d", s.tokens.Add(1)))
	if err := s.client.createProgress(ctx, token); err != nil {
		s.logf("window/workDoneProgress/create: %v", err)
		return nil
	}
	return token
}

// CancelResult is agent.cancel's result.
type CancelResult struct {
	Cancelled bool `json:"cancelled"`
}

// SessionArgs name a session.
type SessionArgs struct {
	Session string `json:"session" required:"true"`
}

func (s *Server) cancelCommand(ctx context.Context, call commandCall, a SessionArgs) (CancelResult, error) {
	live := call.b.Live()
	if live.Running(a.Session) {
		return CancelResult{Cancelled: live.Cancel(a.Session)}, nil
	}
	if _, err := storedSession(ctx, call.b, "agent.cancel", a.Session); err != nil {
		return CancelResult{}, err
	}
	return CancelResult{Cancelled: false}, nil
}
