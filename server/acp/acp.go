package acp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/acp-go-sdk"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// The session modes an ACP client can switch between (session/set_mode):
// what a run may do (agent.Mode) and, in agent mode, how its edits reach
// the files. apply and review are the old names of agent and
// agent-review, still accepted.
const (
	acpModeAgent  = "agent"        // edits written as they are made
	acpModeReview = "agent-review" // each edit asks first
	acpModePlan   = "plan"
	acpModeAsk    = "ask"
)

// acpModeOf is the ACP mode of a name set_mode gives, or a stored
// session's edit mode (apply, review); ok is false for none.
func acpModeOf(name string) (string, bool) {
	switch name {
	case acpModeAgent, acpModeReview, acpModePlan, acpModeAsk:
		return name, true
	case "apply":
		return acpModeAgent, true
	case "review":
		return acpModeReview, true
	}
	return "", false
}

// storedACPMode is the ACP mode a stored session was last prompted in: its
// mode, plan or ask, else its edit mode.
func storedACPMode(s store.Session) string {
	if s.Mode == acpModePlan || s.Mode == acpModeAsk {
		return s.Mode
	}
	return s.Edits
}

// acpRunMode is an ACP mode as the run's mode and edit mode.
func acpRunMode(m string) (agent.Mode, string) {
	switch m {
	case acpModePlan:
		return agent.ModePlan, ""
	case acpModeAsk:
		return agent.ModeAsk, ""
	case acpModeReview:
		return agent.ModeAgent, "review"
	}
	return agent.ModeAgent, "apply"
}

// Serve serves the Agent Client Protocol (version 1) on in and out until
// the client closes the connection or ctx ends: the same settings (the
// environment and opts.Flags), store and agent runtime as the LSP server,
// over a backend of its own. Sessions are the store's: one started here is
// listed and resumed by the LSP clients, and the other way round.
//
// folders are workspace folders to open from the start (agent-lsp acp
// --workspace); each session's cwd is added when it is not one of them.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts session.Host, folders []string) error {
	opts = opts.WithDefaults()
	opts.Version = cmp.Or(opts.Version, "unknown")
	st, warnings, err := config.Resolve(opts.Getenv, nil, opts.Flags)
	if err != nil {
		return err
	}
	st.Interactive = true // the client answers session/request_permission
	a := &acpAgent{opts: opts, sessions: map[string]*acpSession{}, ready: make(chan struct{})}
	fs := make([]session.Folder, len(folders))
	for i, f := range folders {
		abs, err := filepath.Abs(f)
		if err != nil {
			return fmt.Errorf("workspace %s: %w", f, err)
		}
		fs[i] = session.Folder{Path: abs}
	}
	o := session.Options{Settings: st, Environ: opts.Environ(), Getenv: opts.Getenv, Warn: a.log, Ask: a.askMCP, Version: opts.Version}
	b, notices, err := session.NewBackend(opts.Hub, o, workspace.UTF8, fs)
	if err != nil {
		return err
	}
	a.b = b
	a.out = &acpOut{w: out}
	conn := acp.NewAgentSideConnection(a, a.out, in) // serves from here on: the backend is ready
	a.conn = conn
	close(a.ready)
	for _, n := range append(append(warnings, opts.Notices...), notices...) {
		a.log(n)
	}
	a.log(fmt.Sprintf("agent-lsp %s serving ACP: model %s at %s, store %s", opts.Version, st.Model, st.BaseURL, b.StoreName()))
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	a.cancelAll()
	a.runs.Wait()
	a.backend().Close()
	return nil
}

// acpAgent serves one ACP connection: acp.Agent over a backend. Each ACP
// session is a store session of the same ID.
type acpAgent struct {
	opts   session.Host
	conn   *acp.AgentSideConnection // set once, before ready closes; read through client
	out    *acpOut                  // the connection's output, set once before conn
	ready  chan struct{}
	always session.Allowances // commands and tools allowed "always" for a session
	runs   sync.WaitGroup     // prompts in progress

	mu       sync.Mutex             // guards b, caps, sessions and mcp
	b        *session.Backend       // replaced when a session brings MCP servers
	caps     acp.ClientCapabilities // what the client offers (initialize)
	sessions map[string]*acpSession // by ID: the sessions this connection created or loaded
	mcp      map[string]json.RawMessage
}

var (
	_ acp.Agent       = (*acpAgent)(nil)
	_ acp.AgentLoader = (*acpAgent)(nil)
)

// acpSession is a session of the connection.
type acpSession struct {
	id      string
	project string // the workspace project of its cwd
	calls   *acpCalls

	mu      sync.Mutex // guards mode, stored, cancel, prompts, model and announced
	mode    string     // acpModeAgent, acpModeReview, acpModePlan or acpModeAsk
	stored  bool       // the store has it (its first prompt ran, or it was loaded)
	cancel  context.CancelFunc
	prompts int // prompts begun; cancel is the newest one's
	// model is the model /model chose for the session's next prompts ("":
	// the session's, else the settings').
	model string
	// announced is what available_commands_update last told the client.
	announced string
}

func (s *acpSession) getMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// client returns the connection to the client, once it is set.
func (a *acpAgent) client() *acp.AgentSideConnection {
	<-a.ready
	return a.conn
}

func (a *acpAgent) backend() *session.Backend {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.b
}

func (a *acpAgent) clientCaps() acp.ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps
}

func (a *acpAgent) session(id acp.SessionId) (*acpSession, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[string(id)]
	if !ok {
		return nil, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %s: create it with session/new or load it with session/load", id)})
	}
	return s, nil
}

// log writes a line to the server log (stderr): ACP has no log channel.
func (a *acpAgent) log(msg string) {
	a.opts.Logf("%s", msg)
}

// Initialize implements acp.Agent.
func (a *acpAgent) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.mu.Lock()
	a.caps = p.ClientCapabilities
	a.mu.Unlock()
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo:       &acp.Implementation{Name: "agent-lsp", Title: ptr("agent-lsp"), Version: a.opts.Version},
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  acp.PromptCapabilities{EmbeddedContext: true, Image: true},
			McpCapabilities:     acp.McpCapabilities{Http: true},
			SessionCapabilities: acp.SessionCapabilities{List: &acp.SessionListCapabilities{}, Close: &acp.SessionCloseCapabilities{}},
		},
		AuthMethods: []acp.AuthMethod{},
	}, nil
}

// Authenticate implements acp.Agent: the endpoint's key comes from the
// environment, as for the LSP server.
func (a *acpAgent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

// NewSession implements acp.Agent: a session whose project is cwd (added
// as a workspace folder), with the client's MCP servers.
func (a *acpAgent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if err := a.addMCP(p.McpServers); err != nil {
		return acp.NewSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	project, err := a.project(p.Cwd)
	if err != nil {
		return acp.NewSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	s := a.addSession(agent.NewSessionID(), project, false, "")
	a.out.afterAnswer(s.id, func() { a.announceCommands(context.Background(), s) })
	return acp.NewSessionResponse{SessionId: acp.SessionId(s.id), Modes: modes(s.getMode())}, nil
}

// LoadSession implements acp.AgentLoader: the stored conversation is
// replayed as session/update notifications before the answer.
func (a *acpAgent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	b := a.backend()
	id := string(p.SessionId)
	sess, err := b.Store.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %s in the store %s", id, b.StoreName())})
	}
	if err != nil {
		return acp.LoadSessionResponse{}, fmt.Errorf("load session %s: %w", id, err)
	}
	if err := a.addMCP(p.McpServers); err != nil {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	// The session continues in its own project: its folder is added, and cwd's.
	if sess.Root != "" {
		if _, err := a.project(sess.Root); err != nil {
			a.log(fmt.Sprintf("session %s: its folder %s: %v", id, sess.Root, err))
		}
	}
	project, err := a.project(p.Cwd)
	if err != nil {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if pr, ok := a.backend().Workspace.ProjectFor(sess.Root); ok && sess.Root != "" {
		project = pr.Name()
	}
	s := a.addSession(id, project, true, storedACPMode(sess)) // the mode it was last prompted in
	msgs, err := a.backend().Runtime.Transcript(ctx, id, "")
	if err != nil {
		return acp.LoadSessionResponse{}, fmt.Errorf("load session %s: %w", id, err)
	}
	for _, u := range replay(msgs, s, a.backend().Workspace) {
		if err := a.client().SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: u}); err != nil {
			return acp.LoadSessionResponse{}, err
		}
	}
	a.announceCommands(ctx, s) // the client knows the session it loads
	return acp.LoadSessionResponse{Modes: modes(s.getMode())}, nil
}

// ListSessions implements acp.Agent: the store's sessions, newest first;
// with cwd, those of the project at cwd.
func (a *acpAgent) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	b := a.backend()
	list, err := b.Store.Sessions(ctx, "")
	if err != nil {
		return acp.ListSessionsResponse{}, fmt.Errorf("list sessions: %w", err)
	}
	out := []acp.SessionInfo{}
	for _, s := range list {
		if p.Cwd != nil && filepath.Clean(*p.Cwd) != filepath.Clean(s.Root) {
			continue
		}
		info := acp.SessionInfo{SessionId: acp.SessionId(s.ID), Cwd: s.Root, UpdatedAt: ptr(s.Updated.UTC().Format(time.RFC3339))}
		if s.Title != "" {
			info.Title = ptr(s.Title)
		}
		out = append(out, info)
	}
	return acp.ListSessionsResponse{Sessions: out}, nil
}

// SetSessionMode implements acp.Agent: agent writes the agent's edits as
// it makes them; agent-review asks (session/request_permission) before
// each; plan and ask offer only the tools that read. The session's next
// prompts run in it.
func (a *acpAgent) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	mode, ok := acpModeOf(string(p.ModeId))
	if !ok {
		return acp.SetSessionModeResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown mode %q: agent, agent-review, plan or ask", p.ModeId)})
	}
	if mode == acpModeAgent && a.backend().Settings.Edits == "review" {
		mode = acpModeReview // the edits setting: never loosened
	}
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
	return acp.SetSessionModeResponse{}, nil
}

// Cancel implements acp.Agent: the session's prompt ends with stop reason
// cancelled (the SDK cancels its context; the runtime stops the run where
// it can be resumed).
func (a *acpAgent) Cancel(ctx context.Context, p acp.CancelNotification) error {
	s, err := a.session(p.SessionId)
	if err != nil {
		return nil // a notification: nothing to answer
	}
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	a.backend().Live().Cancel(s.id)
	return nil
}

// CloseSession implements acp.Agent: the connection forgets the session
// (cancelling its prompt); the store keeps it.
func (a *acpAgent) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	if err := a.Cancel(ctx, acp.CancelNotification{SessionId: p.SessionId}); err != nil {
		return acp.CloseSessionResponse{}, err
	}
	a.mu.Lock()
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	return acp.CloseSessionResponse{}, nil
}

// ResumeSession implements acp.Agent: not offered (session/load is).
func (a *acpAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

// SetSessionConfigOption implements acp.Agent: no configuration options.
func (a *acpAgent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

// Prompt implements acp.Agent: one run of the session's agent, streamed as
// session/update notifications. A failed run is an error that carries its
// reason.
func (a *acpAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	text, err := promptText(p.Prompt)
	if err != nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	imgs, err := acpImages(p.Prompt)
	if err != nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	a.runs.Add(1)
	defer a.runs.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.prompts++
	mine := s.prompts
	s.cancel = cancel
	stored, mode, chosen := s.stored, s.mode, s.model
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.prompts == mine {
			s.cancel = nil // still this prompt's: a later prompt has set its own
		}
		s.mu.Unlock()
	}()
	b := a.backend()
	u := &acpUpdates{conn: a.client(), session: s, ws: b.Workspace}
	runMode, edits := acpRunMode(mode)
	req := agent.Request{Prompt: text, Project: s.project, Edits: edits, Mode: runMode, Model: chosen, Images: imgs}
	if stored {
		req.Session = s.id
	} else {
		req.NewID = s.id
	}
	review := edits == "review"
	defer a.announceCommands(context.WithoutCancel(ctx), s) // the prompt may have changed the command files
	if done, err := a.acpSlash(ctx, s, &req, &review); done || err != nil {
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err // a built-in answers without the model
	}
	if session.NeedsKey(b.Settings.BaseURL, b.Settings.APIKey) { // no request to an endpoint that needs a key when there is none
		d := session.ReasonDataOf(b.Settings, agent.ReasonNoAPIKey, "model.apiKeyEnv")
		return acp.PromptResponse{}, &acp.RequestError{Code: -32602, Data: d,
			Message: fmt.Sprintf("no API key: %s needs one and %s is not set (set it in the environment the client starts agent-lsp with, or point OPENAI_BASE_URL at a server that needs none)", d.BaseURL, d.APIKeyEnv)}
	}
	ports := session.Ports{Events: u.event, Ask: u.askPermission, Always: &a.always, Before: func() {},
		Editor: &acpEditor{conn: a.client(), caps: a.clientCaps().Fs, ws: b.Workspace, session: s, review: review, allowEdit: b.AllowEdit, updates: u}}
	res, err := b.Run(context.WithValue(ctx, acpSessionKey{}, s.id), session.RunSpec{Request: req}, ports)
	if res.Status != agent.StatusQueued { // a queued prompt's calls are the running prompt's
		u.endOpenCalls(res.Status)
	}
	if res.Session != "" {
		s.mu.Lock()
		s.stored = true
		s.mu.Unlock()
	}
	if err != nil {
		return acp.PromptResponse{}, acpError(err)
	}
	switch res.Status {
	case store.StatusDone:
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	case store.StatusCancelled, store.StatusInterrupted:
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case store.StatusLimit:
		if res.Limit == agent.LimitTokens {
			return acp.PromptResponse{StopReason: acp.StopReasonMaxTokens}, nil // the run's token limit
		}
		return acp.PromptResponse{StopReason: acp.StopReasonMaxTurnRequests}, nil
	case agent.StatusQueued:
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil // read by the session's running run
	}
	return acp.PromptResponse{}, acpError(errors.New(cmp.Or(res.Error, "the run failed")))
}

// acpSessionKey carries the ACP session of a run's context, for the
// questions its MCP servers ask.
type acpSessionKey struct{}

// acpError is a failed prompt as an ACP error: the internal error code,
// the reason as its message (clients show the message) and in its data.
func acpError(err error) error {
	var re *acp.RequestError
	if errors.As(err, &re) {
		return err
	}
	return &acp.RequestError{Code: -32603, Message: err.Error(), Data: map[string]any{"error": err.Error()}}
}

func ptr[T any](v T) *T { return &v }

// modes are the session modes offered, with current selected.
func modes(current string) *acp.SessionModeState {
	return &acp.SessionModeState{CurrentModeId: acp.SessionModeId(current), AvailableModes: []acp.SessionMode{
		{Id: acpModeAgent, Name: "Agent", Description: ptr("Reads, edits and runs commands; its edits are written as it makes them.")},
		{Id: acpModeReview, Name: "Agent (review edits)", Description: ptr("As Agent, but each edit is shown as a diff and written only once you allow it.")},
		{Id: acpModePlan, Name: "Plan", Description: ptr("Only reads, and answers with a plan; changes nothing.")},
		{Id: acpModeAsk, Name: "Ask", Description: ptr("Only reads, and answers questions; changes nothing.")},
	}}
}

// addSession registers a session of the connection, in mode when that is
// one (an ACP mode, its old name, or a stored edit mode), else in the mode
// setting's (agent: agent-review when the edits setting says review; a
// stored mode never loosens it).
func (a *acpAgent) addSession(id, project string, stored bool, mode string) *acpSession {
	st := a.backend().Settings
	m, ok := acpModeOf(mode)
	if !ok {
		m, _ = acpModeOf(cmp.Or(st.Mode, acpModeAgent))
	}
	if m == acpModeAgent && st.Edits == "review" {
		m = acpModeReview
	}
	mode = m
	s := &acpSession{id: id, project: project, mode: mode, stored: stored, calls: &acpCalls{byID: map[string]*acpCall{}}}
	a.mu.Lock()
	a.sessions[id] = s
	a.mu.Unlock()
	return s
}

// project returns the name of the workspace project whose root is dir,
// adding dir as a workspace folder when none is.
func (a *acpAgent) project(dir string) (string, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("cwd must be an absolute path, not %q", dir)
	}
	dir = filepath.Clean(dir)
	ws := a.backend().Workspace
	for _, p := range ws.Projects() {
		if p.Root() == dir {
			return p.Name(), nil
		}
	}
	p, err := ws.Add("", dir)
	if err != nil {
		return "", err
	}
	return p.Name(), nil
}

// cancelAll cancels every prompt of the connection (it is closing).
func (a *acpAgent) cancelAll() {
	a.mu.Lock()
	list := make([]*acpSession, 0, len(a.sessions))
	for _, s := range a.sessions {
		list = append(list, s)
	}
	a.mu.Unlock()
	for _, s := range list {
		s.mu.Lock()
		cancel := s.cancel
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
}

// addMCP adds a session's MCP servers to the connection's (client-provided
// servers are the user's: they start without asking) and reconfigures the
// backend when they change the set.
func (a *acpAgent) addMCP(servers []acp.McpServer) error {
	if len(servers) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mcp == nil {
		a.mcp = map[string]json.RawMessage{}
	}
	changed := false
	for i, s := range servers {
		name, def, err := mcpDefinition(s)
		if err != nil {
			return fmt.Errorf("mcpServers[%d]: %w", i, err)
		}
		if string(a.mcp[name]) != string(def) {
			a.mcp[name], changed = def, true
		}
	}
	if !changed {
		return nil
	}
	st := a.b.Settings.Clone()
	merged := map[string]json.RawMessage{}
	if len(st.MCPServers) > 0 {
		if err := json.Unmarshal(st.MCPServers, &merged); err != nil {
			return fmt.Errorf("the mcpServers setting: %w", err)
		}
	}
	names := make([]string, 0, len(a.mcp))
	for n := range a.mcp {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		merged[n] = a.mcp[n]
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return err
	}
	st.MCPServers = raw
	nb, notices, err := a.b.Reconfigure(st)
	if err != nil {
		return err
	}
	for _, n := range notices {
		a.log(n)
	}
	nb.Adopted(a.b)
	a.b = nb
	return nil
}

// mcpDefinition is an ACP MCP server in the .mcp.json shape.
func mcpDefinition(s acp.McpServer) (string, json.RawMessage, error) {
	pairs := func(kv map[string]string) map[string]string {
		if len(kv) == 0 {
			return nil
		}
		return kv
	}
	switch {
	case s.Stdio != nil:
		env := map[string]string{}
		for _, e := range s.Stdio.Env {
			env[e.Name] = e.Value
		}
		def, err := json.Marshal(struct {
			Command string            `json:"command"`
			Args    []string          `json:"args,omitempty"`
			Env     map[string]string `json:"env,omitempty"`
		}{s.Stdio.Command, s.Stdio.Args, pairs(env)})
		return s.Stdio.Name, def, err
	case s.Http != nil:
		headers := map[string]string{}
		for _, h := range s.Http.Headers {
			headers[h.Name] = h.Value
		}
		def, err := json.Marshal(struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers,omitempty"`
		}{"http", s.Http.Url, pairs(headers)})
		return s.Http.Name, def, err
	case s.Sse != nil:
		return "", nil, fmt.Errorf("the SSE transport of %s is not supported: use stdio or http", s.Sse.Name)
	}
	return "", nil, errors.New("an MCP server needs a command (stdio) or a url (http)")
}

// promptText is the prompt of ACP content blocks: the text blocks, each
// embedded resource as an attached file, each resource link as a path.
func promptText(blocks []acp.ContentBlock) (string, error) {
	var b strings.Builder
	for _, c := range blocks {
		switch {
		case c.Text != nil:
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(c.Text.Text)
		case c.Resource != nil && c.Resource.Resource.TextResourceContents != nil:
			r := c.Resource.Resource.TextResourceContents
			fence := fenceFor(r.Text)
			fmt.Fprintf(&b, "\n\n(The user attached %s:)\n%s\n%s\n%s", uriPath(r.Uri), fence, strings.TrimRight(r.Text, "\n"), fence)
		case c.ResourceLink != nil:
			fmt.Fprintf(&b, "\n\n(The user refers to %s)", uriPath(c.ResourceLink.Uri))
		case c.Resource != nil:
			fmt.Fprintf(&b, "\n\n(The user attached a binary resource, which is left out)")
		case c.Image != nil: // acpImages
		default:
			return "", errors.New("the prompt has a block of a kind this agent does not take (audio is not supported)")
		}
	}
	if strings.TrimSpace(b.String()) == "" && !slices.ContainsFunc(blocks, func(c acp.ContentBlock) bool { return c.Image != nil }) {
		return "", errors.New("the prompt is empty")
	}
	return strings.TrimSpace(b.String()), nil
}

// fenceFor is a Markdown code fence longer than every run of backticks in
// text, so that the text cannot close it.
func fenceFor(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// uriPath is the path of a file:// URI, else the URI.
func uriPath(u string) string {
	if strings.HasPrefix(u, "file://") {
		return session.Filename(u)
	}
	return u
}

// askMCP asks about a repository's MCP server (the backend's asker): a
// permission request of the session whose run starts the server.
func (a *acpAgent) askMCP(ctx context.Context, message string, actions ...string) (string, error) {
	id, _ := ctx.Value(acpSessionKey{}).(string)
	if id == "" {
		return "", errors.New("no session to ask in")
	}
	opts := make([]acp.PermissionOption, len(actions))
	for i, act := range actions {
		kind := acp.PermissionOptionKindAllowOnce
		switch {
		case strings.HasPrefix(act, "Always"):
			kind = acp.PermissionOptionKindAllowAlways
		case act == session.MCPDeny || act == session.Deny:
			kind = acp.PermissionOptionKindRejectOnce
		}
		opts[i] = acp.PermissionOption{OptionId: acp.PermissionOptionId(act), Name: act, Kind: kind}
	}
	id2 := fmt.Sprintf("mcp-approval-%d", time.Now().UnixNano())
	resp, err := a.client().RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: acp.SessionId(id), Options: opts,
		ToolCall: acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(id2), Title: ptr(firstLine(message)), Kind: ptr(acp.ToolKindExecute),
			Status: ptr(acp.ToolCallStatusPending), Content: []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(message))}}})
	if err != nil {
		return "", err
	}
	if resp.Outcome.Selected == nil {
		return "", nil
	}
	return string(resp.Outcome.Selected.OptionId), nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
