// Package agent runs the coding agent: a ReAct loop (model with tools, then
// the tools, until the model answers) on the graph engine, with subagents in
// isolated contexts, a trimmed context window and summaries of old turns.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Errors a caller can tell apart.
var (
	ErrUnknownSession = errors.New("unknown session")
	ErrUnknownProject = errors.New("unknown project")
	ErrSessionBusy    = errors.New("session is already running")
	ErrNoProject      = errors.New("no project is open")
)

// Config configures a Runtime. Zero values take the documented defaults.
type Config struct {
	Model     model.Model
	Workspace *workspace.Workspace
	Store     store.Store // default: in memory
	Tools     tools.Set   // default: tools.All()
	// MaxSteps is a run's step limit (a model turn and a tool round are one step each); default 100.
	MaxSteps int
	// Window is how many recent messages the model sees, 10..100; default 40.
	Window int
	// MaxToolOutput is the size in bytes a tool output is cut to; default 16 KiB.
	MaxToolOutput int
	// SummaryThreshold is the history length past which older turns are
	// summarized; default 100, negative disables.
	SummaryThreshold int
	// SubagentConcurrency bounds subagents running at once; default 4.
	SubagentConcurrency int
	// CommandTimeout is run_command's default timeout; default 2 minutes.
	CommandTimeout time.Duration
}

// Summary is the compressed history of old turns.
type Summary struct {
	Text string `json:"text"`
	UpTo string `json:"upTo"` // ID of the newest message it covers
}

// Runtime runs agent sessions. It is safe for concurrent use.
type Runtime struct {
	cfg     Config
	graph   *graph.Graph
	st      schema
	prompts promptCache
	subSem  chan struct{}

	mu     sync.Mutex
	active map[string]context.CancelFunc
}

type schema struct {
	messages graph.Messages
	summary  graph.Value[Summary]
	project  graph.Value[string]
	todos    graph.Value[[]tools.Todo]
}

// New returns a runtime for cfg.
func New(cfg Config) (*Runtime, error) {
	if cfg.Model == nil || cfg.Workspace == nil {
		return nil, errors.New("agent: config needs a model and a workspace")
	}
	if cfg.Store == nil {
		cfg.Store = store.NewMemory()
	}
	if cfg.Tools == nil {
		cfg.Tools = tools.All()
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 100
	}
	if cfg.Window == 0 {
		cfg.Window = 40
	}
	cfg.Window = min(max(cfg.Window, 10), 100)
	if cfg.MaxToolOutput <= 0 {
		cfg.MaxToolOutput = 16 << 10
	}
	if cfg.SummaryThreshold == 0 {
		cfg.SummaryThreshold = 100
	}
	if cfg.SubagentConcurrency <= 0 {
		cfg.SubagentConcurrency = 4
	}
	s := graph.NewSchema()
	rt := &Runtime{cfg: cfg, active: map[string]context.CancelFunc{}, subSem: make(chan struct{}, cfg.SubagentConcurrency),
		st: schema{
			messages: graph.NewMessages(s, "messages"),
			summary:  graph.NewValue[Summary](s, "summary"),
			project:  graph.NewValue[string](s, "project"),
			todos:    graph.NewValue[[]tools.Todo](s, "todos"),
		}}
	g, err := graph.New(s).
		Node("agent", rt.agentNode).
		Node("tools", rt.toolsNode).
		Edge(graph.Start, "agent").
		Branch("agent", rt.route).
		Edge("tools", "agent").
		Compile()
	if err != nil {
		return nil, err
	}
	rt.graph = g
	return rt, nil
}

// Event is a structured progress event (PROTOCOL.md, agent/event without
// session and seq, which the server adds).
type Event struct {
	Session   string           `json:"session"`
	Type      string           `json:"type"`
	Text      string           `json:"text,omitempty"`
	Message   *message.Message `json:"message,omitempty"`
	Name      string           `json:"name,omitempty"`
	Args      string           `json:"args,omitempty"`
	CallID    string           `json:"callId,omitempty"`
	OK        *bool            `json:"ok,omitempty"`
	Summary   string           `json:"summary,omitempty"`
	ContextID string           `json:"contextId,omitempty"`
	ParentID  string           `json:"parentId,omitempty"`
	Task      string           `json:"task,omitempty"`
	URI       string           `json:"uri,omitempty"`
	Applied   *bool            `json:"applied,omitempty"`
	Status    string           `json:"status,omitempty"`
	Project   string           `json:"project,omitempty"`
	Error     string           `json:"error,omitempty"`
}

// Selection is the part of a file a prompt is about.
type Selection struct {
	Path  string
	Range workspace.Range
}

// Request starts or continues a run.
type Request struct {
	Session     string // "" starts a new session
	Project     string // "" keeps the session's current project, else the first
	Prompt      string
	Selection   *Selection
	Editor      tools.Editor
	Permissions tools.Permissions
	Events      func(Event) // called from several goroutines, one call at a time per run
	MaxSteps    int
	// Durability overrides the store's default for this run ("" keeps it).
	Durability store.Durability
}

// Result is how a run ended.
type Result struct {
	Session string      `json:"session"`
	Status  string      `json:"status"`
	Reply   string      `json:"reply"`
	Edits   int         `json:"edits"`
	Steps   int         `json:"steps"`
	Usage   model.Usage `json:"usage"`
	Error   string      `json:"error,omitempty"`
}

// run is one invocation's context, reached by nodes through ctx.
type run struct {
	rt        *Runtime
	session   store.Session
	contextID string // "" for the session's own run
	parentID  string
	editor    tools.Editor
	perms     tools.Permissions
	tools     tools.Set
	acc       *accumulator
}

type accumulator struct {
	mu     sync.Mutex
	usage  model.Usage
	edits  int
	events func(Event)
}

func (a *accumulator) emit(e Event) {
	if a.events == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events(e)
}

func (r *run) emit(e Event) {
	e.Session = r.session.ID
	if r.contextID != "" && e.ContextID == "" {
		e.ContextID, e.ParentID = r.contextID, r.parentID
	}
	r.acc.emit(e)
}

type runKey struct{}

func runFrom(ctx context.Context) *run { return ctx.Value(runKey{}).(*run) }

func boolp(b bool) *bool { return &b }

func newID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Cancel cancels a session's running run and reports whether one was running.
func (rt *Runtime) Cancel(session string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	cancel, ok := rt.active[session]
	if ok {
		cancel()
	}
	return ok
}

// Running reports whether a session has a run in progress.
func (rt *Runtime) Running(session string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	_, ok := rt.active[session]
	return ok
}

func errBusy(session string) error {
	return fmt.Errorf("%w: %s (cancel it or wait for it to end)", ErrSessionBusy, session)
}

func (rt *Runtime) begin(ctx context.Context, session string) (context.Context, func(), error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, busy := rt.active[session]; busy {
		return nil, nil, errBusy(session)
	}
	ctx, cancel := context.WithCancel(ctx)
	rt.active[session] = cancel
	return ctx, func() {
		cancel()
		rt.mu.Lock()
		delete(rt.active, session)
		rt.mu.Unlock()
	}, nil
}

// title makes a session title from the first words of a prompt.
func title(prompt string) string {
	words := strings.Fields(prompt)
	if len(words) > 8 {
		words = append(words[:8], "…")
	}
	return strings.Join(words, " ")
}

// resolveProject picks the run's project: the requested one, the session's,
// or the first.
func (rt *Runtime) resolveProject(requested, current string) (string, error) {
	if requested != "" {
		if _, ok := rt.cfg.Workspace.Project(requested); !ok {
			return "", fmt.Errorf("%w %q (projects: %s)", ErrUnknownProject, requested, strings.Join(rt.cfg.Workspace.Names(), ", "))
		}
		return requested, nil
	}
	if _, ok := rt.cfg.Workspace.Project(current); ok && current != "" {
		return current, nil
	}
	ps := rt.cfg.Workspace.Projects()
	if len(ps) == 0 {
		return "", ErrNoProject
	}
	return ps[0].Name(), nil
}

// Run runs the prompt in a new or existing session until the agent answers,
// the step limit is hit, the run is cancelled or fails.
func (rt *Runtime) Run(ctx context.Context, req Request) (Result, error) {
	if strings.TrimSpace(req.Prompt) == "" {
		return Result{}, errors.New("prompt is empty")
	}
	var sess store.Session
	if req.Session != "" {
		if rt.Running(req.Session) { // it may not have reached its first checkpoint yet
			return Result{}, errBusy(req.Session)
		}
		s, err := rt.cfg.Store.Session(ctx, req.Session)
		if errors.Is(err, store.ErrNotFound) {
			return Result{}, fmt.Errorf("%w %q", ErrUnknownSession, req.Session)
		} else if err != nil {
			return Result{}, err
		}
		sess = s
	} else {
		now := time.Now()
		sess = store.Session{ID: "s-" + message.NewID(), Title: title(req.Prompt), Status: graph.StatusRunning, Created: now, Updated: now}
	}
	project, err := rt.resolveProject(req.Project, sess.Project)
	if err != nil {
		return Result{}, err
	}
	sess.Project = project
	ctx, end, err := rt.begin(ctx, sess.ID)
	if err != nil {
		return Result{}, err
	}
	defer end()
	if p, ok := rt.cfg.Workspace.Project(project); ok {
		p.Refresh() // the branch may have changed since the last run
	}
	human := message.NewHuman(rt.promptText(req))
	human.Name = "human@" + project
	r := rt.newRun(sess, req)
	r.emit(Event{Type: "run.start", Project: project})
	r.emit(Event{Type: "message", Message: &human})
	if req.Durability != "" {
		ctx = store.WithDurability(ctx, req.Durability)
	}
	res, err := rt.graph.Invoke(context.WithValue(ctx, runKey{}, r), rt.graphConfig(r, req.MaxSteps),
		graph.NewPatch(rt.st.messages.Append(human), rt.st.project.Set(project)))
	return rt.finish(ctx, r, res, err)
}

// Resume continues a session's interrupted run from its last checkpoint.
func (rt *Runtime) Resume(ctx context.Context, req Request) (Result, error) {
	if rt.Running(req.Session) {
		return Result{}, errBusy(req.Session)
	}
	sess, err := rt.cfg.Store.Session(ctx, req.Session)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, fmt.Errorf("%w %q", ErrUnknownSession, req.Session)
	} else if err != nil {
		return Result{}, err
	}
	ctx, end, err := rt.begin(ctx, sess.ID)
	if err != nil {
		return Result{}, err
	}
	defer end()
	r := rt.newRun(sess, req)
	r.emit(Event{Type: "run.start", Project: sess.Project})
	if req.Durability != "" {
		ctx = store.WithDurability(ctx, req.Durability)
	}
	res, err := rt.graph.Resume(context.WithValue(ctx, runKey{}, r), rt.graphConfig(r, req.MaxSteps))
	return rt.finish(ctx, r, res, err)
}

func (rt *Runtime) promptText(req Request) string {
	if req.Selection == nil {
		return req.Prompt
	}
	sel := req.Selection
	text := ""
	if b, err := rt.cfg.Workspace.ReadFile(sel.Path); err == nil {
		s := string(b)
		enc := rt.cfg.Workspace.Encoding()
		from, to := workspace.Offset(s, sel.Range.Start, enc), workspace.Offset(s, sel.Range.End, enc)
		if from <= to {
			text = tools.Cut(s[from:to], 8<<10)
		}
	}
	path := sel.Path
	if p, ok := rt.cfg.Workspace.ProjectFor(sel.Path); ok {
		path = p.Rel(sel.Path)
	}
	last := sel.Range.End.Line
	if sel.Range.End.Character == 0 && last > sel.Range.Start.Line {
		last-- // a selection of whole lines ends at the start of the next one
	}
	return fmt.Sprintf("%s\n\n(The user selected %s lines %d-%d:)\n```\n%s\n```", req.Prompt, path,
		sel.Range.Start.Line+1, last+1, text)
}

func (rt *Runtime) newRun(sess store.Session, req Request) *run {
	return &run{rt: rt, session: sess, editor: req.Editor, perms: req.Permissions, tools: rt.cfg.Tools,
		acc: &accumulator{events: req.Events}}
}

func (rt *Runtime) graphConfig(r *run, maxSteps int) graph.Config {
	if maxSteps <= 0 {
		maxSteps = rt.cfg.MaxSteps
	}
	cfg := graph.Config{Thread: r.session.ID, Namespace: r.contextID, Checkpointer: rt.cfg.Store, StepLimit: maxSteps}
	if r.contextID == "" {
		cfg.OnCheckpoint = func(cp *store.Checkpoint, s graph.State) {
			sess := r.session
			sess.Status, sess.Updated = cp.Status, time.Now()
			sess.Messages = len(rt.st.messages.Get(s))
			if p := rt.st.project.Get(s); p != "" {
				sess.Project = p
			}
			cp.Session = &sess
		}
	}
	return cfg
}

// finish closes a run: a cancelled run's unanswered tool calls get answers
// so that no orphan call is stored, and the result is assembled.
func (rt *Runtime) finish(ctx context.Context, r *run, res graph.Result, err error) (Result, error) {
	if res.Status == graph.StatusCancelled {
		cerr := rt.graph.Update(context.WithoutCancel(ctx), rt.graphConfig(r, 0), func(s graph.State) graph.Patch {
			return graph.NewPatch(rt.st.messages.Append(rt.cancelAnswers(s)...))
		}, graph.StatusCancelled, "agent")
		if cerr != nil && err == nil {
			err = cerr
		}
	}
	out := Result{Session: r.session.ID, Status: res.Status, Steps: res.Steps}
	r.acc.mu.Lock()
	out.Usage, out.Edits = r.acc.usage, r.acc.edits
	r.acc.mu.Unlock()
	if res.Status == graph.StatusDone {
		if msgs := rt.st.messages.Get(res.State); len(msgs) > 0 && msgs[len(msgs)-1].Role == message.AI {
			out.Reply = msgs[len(msgs)-1].Content
		}
	}
	if err != nil {
		out.Status, out.Error = graph.StatusFailed, err.Error()
	}
	r.emit(Event{Type: "run.end", Status: out.Status, Error: out.Error})
	return out, nil
}

// cancelAnswers answers the newest AI message's unanswered tool calls.
func (rt *Runtime) cancelAnswers(s graph.State) []message.Message {
	msgs := rt.st.messages.Get(s)
	ai, idx := lastAI(msgs)
	if idx < 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range msgs[idx+1:] {
		if m.Role == message.Tool {
			answered[m.ToolCallID] = true
		}
	}
	project := rt.st.project.Get(s)
	var out []message.Message
	for i, c := range ai.ToolCalls {
		if !answered[c.ID] {
			out = append(out, message.Message{ID: toolMessageID(ai.ID, i), Role: message.Tool, Name: "tool@" + project,
				ToolCallID: c.ID, Content: "error: cancelled by the user before this tool finished"})
		}
	}
	return out
}

func lastAI(msgs []message.Message) (message.Message, int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.AI {
			return msgs[i], i
		}
	}
	return message.Message{}, -1
}

func toolMessageID(aiID string, i int) string { return fmt.Sprintf("%s-t%d", aiID, i) }

// route sends each tool call of the newest AI message to its own tools task.
func (rt *Runtime) route(s graph.State) []graph.Route {
	msgs := rt.st.messages.Get(s)
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != message.AI || len(msgs[len(msgs)-1].ToolCalls) == 0 {
		return []graph.Route{graph.To(graph.End)}
	}
	calls := msgs[len(msgs)-1].ToolCalls
	routes := make([]graph.Route, len(calls))
	for i := range calls {
		routes[i] = graph.Send("tools", i)
	}
	return routes
}

// agentNode calls the model with the rebuilt system prompt and the trimmed history.
func (rt *Runtime) agentNode(ctx context.Context, s graph.State) (graph.Patch, error) {
	r := runFrom(ctx)
	project := rt.st.project.Get(s)
	msgs := rt.st.messages.Get(s)
	summary := rt.st.summary.Get(s)
	var writes []graph.Write
	history := msgs
	if summary.UpTo != "" {
		for i, m := range msgs {
			if m.ID == summary.UpTo {
				history = msgs[i+1:]
				break
			}
		}
	}
	if th := rt.cfg.SummaryThreshold; th > 0 && len(history) > th && len(history) > rt.cfg.Window {
		older := history[:len(history)-rt.cfg.Window]
		next, err := rt.summarize(ctx, r, summary, older)
		if err != nil {
			return graph.Patch{}, err
		}
		summary = next
		history = history[len(older):]
		writes = append(writes, rt.st.summary.Set(summary))
	}
	sys := message.Message{ID: "system", Role: message.System, Content: rt.systemPrompt(project, summary, rt.st.todos.Get(s))}
	req := model.Request{Messages: append([]message.Message{sys}, Window(history, rt.cfg.Window, rt.cfg.MaxToolOutput)...), Tools: r.tools.Specs()}
	resp, err := rt.cfg.Model.Chat(ctx, req, func(text string) { r.emit(Event{Type: "message.delta", Text: text}) })
	if err != nil {
		return graph.Patch{}, err
	}
	r.acc.mu.Lock()
	r.acc.usage = r.acc.usage.Add(resp.Usage)
	r.acc.mu.Unlock()
	ai := message.NewAI(resp.Content, resp.ToolCalls...)
	ai.Name = "ai@" + project
	for i := range ai.ToolCalls {
		if ai.ToolCalls[i].ID == "" {
			ai.ToolCalls[i].ID = fmt.Sprintf("call_%s_%d", ai.ID, i)
		}
	}
	r.emit(Event{Type: "message", Message: &ai})
	return graph.NewPatch(append(writes, rt.st.messages.Append(ai))...), nil
}

// summarize folds older messages into the summary.
func (rt *Runtime) summarize(ctx context.Context, r *run, prev Summary, older []message.Message) (Summary, error) {
	var b strings.Builder
	if prev.Text != "" {
		fmt.Fprintf(&b, "Summary so far:\n%s\n\n", prev.Text)
	}
	b.WriteString("Conversation to add:\n")
	for _, m := range older {
		fmt.Fprintf(&b, "[%s] %s\n", m.Role, tools.Cut(m.Content, 2000))
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "  called %s %s\n", c.Name, tools.Cut(c.Args, 300))
		}
	}
	req := model.Request{Messages: []message.Message{
		{ID: "sum-sys", Role: message.System, Content: "Summarize this coding session for your own later reference: the user's goals, decisions, files touched, results of builds and tests, open problems. At most 300 words."},
		{ID: "sum-in", Role: message.Human, Content: "Summarize the conversation.\n\n" + b.String()},
	}}
	resp, err := rt.cfg.Model.Chat(ctx, req, nil)
	if err != nil {
		return prev, fmt.Errorf("summarize history: %w", err)
	}
	r.acc.mu.Lock()
	r.acc.usage = r.acc.usage.Add(resp.Usage)
	r.acc.mu.Unlock()
	return Summary{Text: resp.Content, UpTo: older[len(older)-1].ID}, nil
}

// toolsNode runs one tool call of the newest AI message.
func (rt *Runtime) toolsNode(ctx context.Context, s graph.State) (graph.Patch, error) {
	r := runFrom(ctx)
	var i int
	if err := s.Arg(&i); err != nil {
		return graph.Patch{}, err
	}
	msgs := rt.st.messages.Get(s)
	ai, idx := lastAI(msgs)
	if idx < 0 || i >= len(ai.ToolCalls) {
		return graph.Patch{}, fmt.Errorf("tool call %d not found", i)
	}
	call := ai.ToolCalls[i]
	project := rt.st.project.Get(s)
	env := &tools.Env{Workspace: rt.cfg.Workspace, Project: project, Editor: r.editor, Permissions: r.perms,
		MaxOutput: rt.cfg.MaxToolOutput, CommandTimeout: rt.cfg.CommandTimeout}
	env.Subagent = func(ctx context.Context, task string, maxLoops int) (tools.SubagentResult, error) {
		return rt.subagent(ctx, r, project, task, maxLoops)
	}
	r.emit(Event{Type: "tool.start", Name: call.Name, Args: call.Args, CallID: call.ID})
	res := r.tools.Call(ctx, env, call)
	if ctx.Err() != nil {
		return graph.Patch{}, ctx.Err()
	}
	for _, e := range res.Edits {
		if e.Applied {
			r.acc.mu.Lock()
			r.acc.edits++
			r.acc.mu.Unlock()
		}
		r.emit(Event{Type: "edit", URI: string(uri.File(e.Path)), Applied: boolp(e.Applied)})
	}
	r.emit(Event{Type: "tool.end", CallID: call.ID, Name: call.Name, OK: boolp(!res.IsError), Summary: res.Summary})
	tm := message.Message{ID: toolMessageID(ai.ID, i), Role: message.Tool, Name: "tool@" + project, ToolCallID: call.ID, Content: res.Content}
	writes := []graph.Write{rt.st.messages.Append(tm)}
	// A state effect counts only from the last call of its tool in the turn.
	later := false
	for _, c := range ai.ToolCalls[i+1:] {
		later = later || c.Name == call.Name
	}
	if !later && res.SwitchTo != "" {
		writes = append(writes, rt.st.project.Set(res.SwitchTo))
	}
	if !later && res.Todos != nil {
		writes = append(writes, rt.st.todos.Set(*res.Todos))
	}
	return graph.NewPatch(writes...), nil
}

// subagent runs a task in a fresh state under its own namespace of the session.
func (rt *Runtime) subagent(ctx context.Context, parent *run, project, task string, maxLoops int) (tools.SubagentResult, error) {
	select {
	case rt.subSem <- struct{}{}:
		defer func() { <-rt.subSem }()
	case <-ctx.Done():
		return tools.SubagentResult{}, ctx.Err()
	}
	id := "subagent-" + newID()
	parentID := parent.contextID
	if parentID == "" {
		parentID = parent.session.ID
	}
	child := &run{rt: rt, session: parent.session, contextID: id, parentID: parentID, editor: parent.editor, perms: parent.perms,
		tools: parent.tools.Without("call_subagent"), acc: parent.acc}
	child.emit(Event{Type: "subagent.start", Task: task})
	in := message.NewHuman(task)
	in.Name = "human@" + project
	res, err := rt.graph.Invoke(context.WithValue(ctx, runKey{}, child), rt.graphConfig(child, 2*maxLoops),
		graph.NewPatch(rt.st.messages.Append(in), rt.st.project.Set(project)))
	if ctx.Err() != nil {
		child.emit(Event{Type: "subagent.end", OK: boolp(false), Status: graph.StatusCancelled})
		return tools.SubagentResult{}, ctx.Err()
	}
	out := tools.SubagentResult{OK: err == nil && res.Status == graph.StatusDone, ContextID: id}
	for _, m := range rt.st.messages.Get(res.State) {
		if m.Role == message.AI {
			out.Loops++
		}
	}
	switch {
	case err != nil:
		out.Result = "subagent failed: " + err.Error()
	case res.Status == graph.StatusLimit:
		out.Result = fmt.Sprintf("subagent stopped after %d loops without finishing", out.Loops)
	default:
		if ai, i := lastAI(rt.st.messages.Get(res.State)); i >= 0 {
			out.Result = ai.Content
		}
	}
	child.emit(Event{Type: "subagent.end", OK: boolp(out.OK), Status: res.Status})
	return out, nil
}
