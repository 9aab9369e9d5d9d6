// Package agent runs the coding agent: a ReAct loop (model with tools, then
// the tools, until the model answers) on the graph engine, with subagents in
// isolated contexts, a trimmed context window and summaries of old turns.
package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/agent/transcript"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Errors a caller can tell apart.
var (
	ErrUnknownSession = errors.New("unknown session")
	ErrUnknownProject = errors.New("unknown project")
	ErrSessionBusy    = errors.New("session is already running")
	ErrFolderNotOpen  = errors.New("the session's folder is not open")
	ErrNoProject      = errors.New("no project is open")
	ErrBadSelection   = errors.New("the selection cannot be read")
)

// StatusQueued is the status of an agent.run given to a running session: its
// prompt waits for the running run's next step (Result.Position says where
// in the queue), and that run's result covers it.
const StatusQueued store.Status = "queued"

// Defaults of Config; the configuration table (server/config) documents them.
const (
	DefaultMaxSteps            = graph.DefaultStepLimit
	DefaultWindow              = 200
	DefaultSubagentConcurrency = 4
	DefaultCommandTimeout      = 2 * time.Minute
	DefaultSummaryTimeout      = 2 * time.Minute
)

// Config configures a Runtime. Zero values take the documented defaults.
type Config struct {
	Model     model.Model
	Workspace *workspace.Workspace
	Store     store.Store // default: in memory
	Tools     tools.Set   // default: tools.All()
	// MaxSteps is a run's step limit (a model turn and a tool round are one
	// step each); default DefaultMaxSteps.
	MaxSteps int
	// ContextTokens is the model's context size, which every request fits
	// with room for the answer; default ContextTokensFor(ModelName).
	ContextTokens int
	// ModelName names the model, for its known context size.
	ModelName string
	// Endpoint names the model's endpoint (its base URL) in what the user reads.
	Endpoint string
	// Window is the most recent messages the model sees besides the run's
	// prompts, 10..1000; default DefaultWindow. The token budget usually
	// binds first.
	Window int
	// MaxToolOutput is the size in bytes a tool output is cut to; default tools.DefaultMaxOutput.
	MaxToolOutput int
	// SubagentsReadOnly gives subagents only the tools that read.
	SubagentsReadOnly bool
	// SubagentModels are the models a repository's subagent or command may
	// choose (names, or globs such as gpt-4o*; "*" for any): another model a
	// repository's file names is not used, the run's is. The user's own
	// files choose any model.
	SubagentModels []string
	// UserDir is the user's agent-lsp configuration folder
	// ($XDG_CONFIG_HOME/agent-lsp): its AGENTS.md joins every system
	// prompt, its commands/ and agents/ folders hold the user's own slash
	// commands and subagents. "" for none.
	UserDir string
	// SummaryTimeout bounds one summary call; default DefaultSummaryTimeout.
	SummaryTimeout time.Duration
	// Log receives what an operator should know (a summary that failed);
	// nil discards it. It never receives secrets.
	Log func(format string, args ...any)
	// SubagentConcurrency bounds subagents running at once; default DefaultSubagentConcurrency.
	SubagentConcurrency int
	// CommandTimeout is run_command's default timeout; default DefaultCommandTimeout.
	CommandTimeout time.Duration
	// MaxBackground is how many background processes a session may have
	// running at once; default tools.DefaultMaxBackground, negative: none.
	MaxBackground int
	// BackgroundLinger lets the background processes of a run that is done
	// run on this long after it (at most MaxBackgroundLinger): the
	// session's next run takes them over; Runtime.Close, the server's end
	// and a cancelled run end them at once. 0: they end with their run.
	BackgroundLinger time.Duration
	// MaxHistoryBytes caps a session's rewind history (historycap.go),
	// oldest first; 0: no cap.
	MaxHistoryBytes int64
	// CommandEnv is the environment commands run with: the caller's scrubbed
	// of credentials and sockets (tools.ScrubEnv). Nil: this process's
	// environment scrubbed with the defaults.
	CommandEnv []string
	// Sandbox confines commands under the policy SandboxSettings make for
	// each project; nil runs them unconfined (and the project's own build
	// and test then ask).
	Sandbox         *sandbox.Sandbox
	SandboxSettings sandbox.Settings
	// ToolSource adds other programs' tools (MCP servers') to a run, per
	// project; nil: only Tools.
	ToolSource ToolSource
	// Prices is what models cost (USD per million tokens), by model name:
	// usage events and results then carry a cost.
	Prices map[string]model.Price
	// Language answers the language tools and the diagnostics after edits
	// (the language servers agent-lsp starts) for runs whose Request gives
	// none; nil: no language intelligence.
	Language tools.Language
	// Vision says whether a model takes images: nil when it does, else an
	// error saying why not that names the setting (model.vision). Nil: the
	// well-known models that do (model.KnownVision).
	Vision func(ctx context.Context, model string) error
	// ImageMaxBytes bounds one image a message carries (larger ones are
	// scaled down); default images.DefaultMaxBytes.
	ImageMaxBytes int
	// Fetch is how fetch_url reaches the web: the hosts it may fetch without
	// asking, and its network.
	Fetch tools.FetchConfig
	// Hooks gives each project's runs the commands to run on their events
	// (agent/hooks); nil: none.
	Hooks HookSource
	// ScanLimit is the number of files a project may have for the files a
	// command changes to be looked for (cmdscan.go); 0: DefaultScanLimit,
	// negative: never.
	ScanLimit int
}

// ToolSource provides tools of other programs for a project's runs.
type ToolSource interface {
	// Tools returns the tools for runs in project: what fails to start is
	// left out (and reported by the source itself), never an error that
	// stops the run.
	Tools(ctx context.Context, project *workspace.Project) tools.Set
	// Withheld tells the source which tools the newest run in project left
	// out of the model's list because their definitions did not fit the
	// budget's share (the source's own among them, or none).
	Withheld(project *workspace.Project, names []string)
}

// Summary is the compressed history of old turns.
type Summary struct {
	Text string `json:"text"`
	UpTo string `json:"upTo"` // ID of the newest message it covers
}

// Runtime runs agent sessions: a stateless executor of graph invocations
// for the live sessions a Registry gives it (Start, Resume). It holds no
// registry and no running session; what it keeps is learned knowledge
// (budgets, token estimates, caches), each behind its own lock. It never
// reaches another runtime's graph: a prompt for a session another runtime
// runs goes to that session's Live (Live.Send). It is safe for concurrent
// use.
type Runtime struct {
	cfg         Config
	graph       *graph.Graph
	schema      *graph.Schema
	st          schema
	prompts     promptCache
	subSem      chan struct{}
	langSeen    tools.LangSeen     // the diagnostics each project last showed the agent
	budgetMu    sync.Mutex         // guards budgets
	budgets     map[string]*budget // each model's context, learned as it answers
	autoContext bool               // ContextTokens was not configured: each model's known size
	counter     counter            // token estimates of messages, by ID

	hist *history // the sessions' rewind history (checkpoints.go), its writes counted (historysize.go)

	lingering lingering // background processes outliving their runs (Config.BackgroundLinger)
	scans     liveScans // the command scans under way (bgscan.go)

	instructionFiles fileCache // the projects' instruction files, as last read
}

// schema is the state one run of the graph holds.
type schema struct {
	messages message.Channel
	images   message.ImageChannel // the images the messages show, once each
	summary  graph.Value[Summary]
	project  graph.Value[string]
	todos    graph.Value[[]tools.Todo]
	// commandFilesChanged lists the projects whose build or test definitions
	// the agent changed in this session (tools.Trust); appended, never set.
	commandFilesChanged graph.List[string]
	// runStart is the ID of the human message that started the current run:
	// it and the human messages after it are pinned in every request.
	runStart graph.Value[string]
	// projects is what the session keeps of its projects' context (build
	// and test status, recent errors, diagnostics), restored on load.
	projects graph.Value[[]workspace.Saved]
	// instructionDirs are the folders (absolute) whose AGENTS.md the run
	// reached by reading or editing a file below them; appended, never set.
	instructionDirs graph.List[string]
}

func newSchema() (*graph.Schema, schema) {
	s := graph.NewSchema()
	return s, schema{
		messages: message.NewChannel(s, "messages"),
		images:   message.NewImageChannel(s, "images"),
		summary:  graph.NewValue[Summary](s, "summary"),
		project:  graph.NewValue[string](s, "project"),
		todos:    graph.NewValue[[]tools.Todo](s, "todos"),

		commandFilesChanged: graph.NewList[string](s, "commandFilesChanged"),
		runStart:            graph.NewValue[string](s, "runStart"),
		projects:            graph.NewValue[[]workspace.Saved](s, "projects"),
		instructionDirs:     graph.NewList[string](s, "instructionDirs"),
	}
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
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	cfg.Window = min(max(cfg.Window, 10), 1000)
	if cfg.MaxToolOutput <= 0 {
		cfg.MaxToolOutput = tools.DefaultMaxOutput
	}

	if cfg.SummaryTimeout <= 0 {
		cfg.SummaryTimeout = DefaultSummaryTimeout
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.SubagentConcurrency <= 0 {
		cfg.SubagentConcurrency = DefaultSubagentConcurrency
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = DefaultCommandTimeout
	}
	if cfg.MaxBackground == 0 {
		cfg.MaxBackground = tools.DefaultMaxBackground
	}
	s, st := newSchema()
	rt := &Runtime{cfg: cfg, schema: s, st: st, hist: &history{History: store.NewHistory(cfg.Store)}, subSem: make(chan struct{}, cfg.SubagentConcurrency),
		budgets: map[string]*budget{}, autoContext: cfg.ContextTokens <= 0}
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

// Selection is the part of a file a prompt is about.
type Selection struct {
	Path  string
	Range workspace.Range
}

// Request starts or continues a run.
type Request struct {
	Session string // "" starts a new session
	// NewID is the ID of the new session a request without Session starts
	// ("" makes one): a client that names sessions before their first
	// prompt (ACP's session/new) gives it. It must start with "s-" and be
	// unused.
	NewID       string
	Project     string // "" keeps the session's current project, else the first
	Prompt      string
	Selection   *Selection
	Editor      tools.Editor
	Permissions tools.Permissions
	// Language is the editor's language intelligence (a client that
	// answers agent/diagnostics and agent/languageRequest); nil: the
	// runtime's (Config.Language).
	Language tools.Language
	// Events receives the run's events, one call at a time (from several
	// goroutines); it must not block for long.
	Events   func(event.Event)
	MaxSteps int
	// Durability overrides the store's default for this run ("" keeps it).
	Durability store.Durability
	// Model overrides the session's recorded model, else the configured
	// one, for this run and the session's next ones.
	Model string
	// Edits, when set, is recorded as the session's Edits: how the client
	// has the run's edits reach files ("apply" or "review"; Editor does it).
	Edits string
	// Context lists what the user attached: files, or parts of them (Range
	// set), read as the editor has them and added to the prompt.
	Context []Attachment
	// Images are the images the user attached; the run's model must take
	// images (Config.Vision), else the run does not start.
	Images []ImageInput
	// OutputSchema, when set, is the JSON Schema the run's final answer
	// must be valid against: the model calls of the run (not its
	// subagents') send it as response_format.
	OutputSchema json.RawMessage
	// Title is a new session's title ("": from Prompt), e.g. the slash
	// command the user typed rather than the prompt it expanded to.
	Title string
	// Tools narrows the run's tools to these names or groups (a slash
	// command's allowed-tools, custom.SelectTools); nil: all. A prompt
	// queued into a running run does not change its tools.
	Tools []string
	// Limits bound what the run may spend (a resume gets its own); zero:
	// none.
	Limits Limits
	// Mode is what the run may do: ModeAgent (""), ModePlan or ModeAsk.
	Mode Mode
	// Retry rewinds Session's conversation to before its last prompt and
	// sends that prompt again (Registry.Retry); Prompt is not given.
	Retry bool
	// Isolation IsolationWorktree runs the prompt in a git worktree of the
	// project's HEAD on a branch of its own, committed at the run's end
	// (Result.Branch); "" or "none": in the project.
	Isolation string
}

// Attachment is a file, or a part of it, the user attached to a prompt.
type Attachment struct {
	Path  string
	Range *workspace.Range // nil: the whole file
}

// Result is how a run ended: the result of agent.run and agent.resume. A
// prompt given to a running session is queued: Status is StatusQueued and
// Position its place in the queue; the running run's result covers it.
type Result struct {
	Session string       `json:"session"`
	Status  store.Status `json:"status"`
	Reply   string       `json:"reply"`
	Edits   int          `json:"edits"`
	Steps   int          `json:"steps"`
	Usage   model.Usage  `json:"usage"`
	Error   string       `json:"error,omitempty"`
	// Reason names, for a failed run, the kind of failure a client offers
	// an action for (Reason* constants); "" for the others.
	Reason string `json:"reason,omitempty"`
	// Position is a queued prompt's place in the queue, from 1.
	Position int `json:"position,omitzero"` // omitzero: the server encodes with json/v2, whose omitempty keeps 0
	// Queued holds the prompts queued for this run that it ended without
	// reading (a cancelled run), so that none is lost.
	Queued []string `json:"queued,omitempty"`
	// Limit says, for status limit, which limit stopped the run (LimitSteps,
	// LimitTokens, LimitCost).
	Limit string `json:"limit,omitempty"`
	// Plan is a plan-mode run's plan: its final answer.
	Plan string `json:"plan,omitempty"`
	// Branch is the branch a run in a worktree (Request.Isolation)
	// committed its changes to; Worktree the worktree's folder when it
	// could not be removed (its changes are there, not lost).
	Branch   string `json:"branch,omitempty"`
	Worktree string `json:"worktree,omitempty"`
}

// NewSessionID returns the ID of a new session.
func NewSessionID() string { return "s-" + message.NewID() }

// ContextTokens is the model's context size as the runtime knows it: the
// configured one, or a smaller one a provider's refusal taught it.
func (rt *Runtime) ContextTokens() int { return rt.budgetFor(rt.cfg.ModelName).limit() }

// budgetFor is a model's budget: the configured context size, else the
// model's known one; what a refusal teaches is kept per model.
func (rt *Runtime) budgetFor(model string) *budget {
	rt.budgetMu.Lock()
	defer rt.budgetMu.Unlock()
	b, ok := rt.budgets[model]
	if !ok {
		limit := rt.cfg.ContextTokens
		if rt.autoContext {
			limit = ContextTokensFor(model)
		}
		b = newBudget(limit)
		rt.budgets[model] = b
	}
	return b
}

func errBusy(session string) error {
	return fmt.Errorf("%w: %s (cancel it or wait for it to end)", ErrSessionBusy, session)
}

// localProject is the name, in this runtime's workspace, of the project a
// stored session works in: found by its folder, so that a session is never
// continued in another repository that has the same name here.
// ErrFolderNotOpen when this workspace lacks the folder. A session stored
// before folders were recorded goes by its project's name.
func (rt *Runtime) localProject(sess store.Session) (string, error) {
	if sess.Root == "" {
		return sess.Project, nil
	}
	p, ok := rt.cfg.Workspace.ProjectAt(sess.Root)
	if !ok {
		return "", fmt.Errorf("%w: session %s works in %s: open folder %s in this window to continue it", ErrFolderNotOpen, sess.ID, sess.Root, sess.Root)
	}
	return p.Name(), nil
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

// session returns a stored session, or ErrUnknownSession. The caller
// checked that it is not running (Registry.Running): a session that is
// running is busy even before its first checkpoint stored it.
func (rt *Runtime) session(ctx context.Context, id string) (store.Session, error) {
	s, err := rt.cfg.Store.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, fmt.Errorf("%w %q", ErrUnknownSession, id)
	}
	return s, err
}

// prepare is the session a prompt runs in, stored or new, with the
// project it runs in.
func (rt *Runtime) prepare(ctx context.Context, req Request) (store.Session, error) {
	var sess store.Session
	if req.Session != "" {
		s, err := rt.session(ctx, req.Session)
		if err != nil {
			return store.Session{}, err
		}
		sess = s
	} else {
		now := time.Now()
		id := req.NewID
		if id == "" {
			id = NewSessionID()
		} else if !strings.HasPrefix(id, "s-") {
			return store.Session{}, fmt.Errorf("a new session's ID starts with \"s-\", not %q", id)
		} else if _, err := rt.cfg.Store.Session(ctx, id); err == nil {
			return store.Session{}, fmt.Errorf("session %s exists already", id)
		}
		sess = store.Session{ID: id, Title: transcript.Title(cmp.Or(req.Title, req.Prompt)), Status: store.StatusRunning, Created: now, Updated: now}
	}
	if req.Edits != "" {
		sess.Edits = req.Edits
	}
	if req.Mode != "" {
		sess.Mode = string(req.Mode)
	}
	current, err := rt.localProject(sess)
	if err != nil {
		return store.Session{}, err
	}
	sess.Project, err = rt.resolveProject(req.Project, current)
	return sess, err
}

// Start runs a prompt's graph invocation for the live session l, which
// the registry registered for its session (Registry.Run: the session
// prepared, stored or new, with its project) and which ctx's cancel ends:
// the runtime's graph becomes the Live's thread until the run ends; in a
// worktree of its own when the request asks (finish commits it).
func (rt *Runtime) Start(ctx context.Context, l *Live, req Request) (Result, error) {
	sess := l.stored
	if req.Isolation != IsolationWorktree {
		return rt.startIn(ctx, l, sess, req, nil)
	}
	iso, err := rt.enterWorktree(ctx, sess.Project, branchPrefix(sess.ID), false)
	if err != nil {
		return Result{}, err
	}
	res, err := rt.startIn(ctx, l, sess, req, iso)
	if !iso.done { // the run did not start
		_, _ = rt.leaveWorktree(ctx, iso, commitMessage("session "+sess.ID, req.Prompt))
	}
	return res, err
}

// startIn is Start in the project, or in the worktree iso when not nil.
func (rt *Runtime) startIn(ctx context.Context, l *Live, sess store.Session, req Request, iso *isolated) (Result, error) {
	project := sess.Project
	if iso != nil {
		project = iso.project
	}
	if p, ok := rt.cfg.Workspace.Project(project); ok {
		p.Refresh() // the branch may have changed since the last run
	}
	text, err := rt.promptText(req)
	if err != nil {
		return Result{}, err
	}
	r := rt.newRun(sess, req, project)
	r.isolate(iso, req.Prompt)
	if err := rt.checkPrice(req.Limits, r.model); err != nil {
		return Result{}, err
	}
	rt.seeing(ctx, r)
	imgs, err := rt.promptImages(ctx, r, project, req.Images)
	if err != nil {
		return Result{}, err
	}
	if text, err = rt.promptHooks(ctx, r, project, text); err != nil {
		return Result{}, err
	}
	human := message.NewHuman(text)
	human.Name = "human@" + project
	human.Images = refs(imgs)
	rt.addTools(ctx, r, project)
	if err := rt.fits(r, project, human); err != nil {
		return Result{}, err
	}
	rt.adoptBackground(r)
	l.started(rt, r)
	r.emit(event.RunStart{Project: project, ContextTokens: r.budget.limit(), Withheld: r.withheld, Mode: r.modeName(), Budget: r.acc.budget()})
	r.emit(event.Message{Message: human})
	r.acc.hist.begin(ctx, human.Content, human.ID, r.model)
	res, err := rt.graph.Invoke(context.WithValue(ctx, runKey{}, r), rt.graphConfig(r, req.MaxSteps),
		graph.NewPatch(rt.st.messages.Append(human), rt.st.images.Add(imgs...), rt.st.project.Set(project), rt.st.runStart.Set(human.ID)))
	return rt.finish(ctx, r, res, err)
}

// resumable is a stored session whose interrupted run may continue here,
// with the request's mode.
func (rt *Runtime) resumable(ctx context.Context, req Request) (store.Session, error) {
	sess, err := rt.session(ctx, req.Session)
	if err != nil {
		return store.Session{}, err
	}
	if local, err := rt.localProject(sess); err != nil {
		return store.Session{}, err
	} else if local != sess.Project {
		return store.Session{}, fmt.Errorf("%w: session %s works in the folder %s, open here as project %s but stored as %s: continue it with a prompt (agent.run) instead",
			ErrFolderNotOpen, sess.ID, sess.Root, local, sess.Project)
	}
	if req.Mode != "" {
		sess.Mode = string(req.Mode)
	}
	return sess, nil
}

// Resume continues the interrupted run of the live session l, which the
// registry registered for its stored session (Registry.Resume), from its
// last checkpoint.
func (rt *Runtime) Resume(ctx context.Context, l *Live, req Request) (Result, error) {
	sess := l.stored
	iso, err := rt.resumeWorktree(ctx, sess)
	if err != nil {
		return Result{}, err
	}
	r := rt.newRun(sess, req, sess.Project)
	r.isolate(iso, sess.Title)
	if iso != nil {
		defer func() {
			if !iso.done { // the run did not start
				_, _ = rt.leaveWorktree(ctx, iso, commitMessage("session "+sess.ID, sess.Title))
			}
		}()
	}
	if err := rt.checkPrice(req.Limits, r.model); err != nil {
		return Result{}, err
	}
	rt.seeing(ctx, r)
	rt.addTools(ctx, r, sess.Project)
	rt.showTools(r, sess.Project)
	rt.adoptBackground(r)
	l.started(rt, r)
	r.acc.hist.resume(ctx)
	r.emit(event.RunStart{Project: sess.Project, ContextTokens: r.budget.limit(), Withheld: r.withheld, Mode: r.modeName(), Budget: r.acc.budget()})
	res, err := rt.graph.Resume(context.WithValue(ctx, runKey{}, r), rt.graphConfig(r, req.MaxSteps))
	return rt.finish(ctx, r, res, err)
}

// promptText is the prompt with the selection it is about: the selected
// text of a file inside a project (a file outside every project, or one that
// cannot be read as a regular file, is refused).
func (rt *Runtime) promptText(req Request) (string, error) {
	text := req.Prompt
	if req.Selection != nil {
		q, err := rt.quote(req.Selection.Path, &req.Selection.Range, 8<<10)
		if err != nil {
			return "", err
		}
		text += "\n\n(The user selected " + q
	}
	for _, a := range req.Context {
		q, err := rt.quote(a.Path, a.Range, rt.cfg.MaxToolOutput)
		if err != nil {
			return "", err
		}
		text += "\n\n(The user attached " + q
	}
	return text, nil
}

// quote is a file's text (an open document's, unsaved changes included),
// or the part in rng, fenced and cut to limit bytes, after its name: "NAME
// lines A-B:)" or "NAME (N lines):)". The file must be inside a project.
func (rt *Runtime) quote(path string, rng *workspace.Range, limit int) (string, error) {
	p, ok := rt.cfg.Workspace.ProjectFor(path)
	if !ok {
		return "", fmt.Errorf("%w: %s is outside every project", ErrBadSelection, path)
	}
	abs, err := p.Resolve(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadSelection, err)
	}
	var s string
	if d, open := rt.cfg.Workspace.Document(abs); open {
		s = d.Text
	} else {
		b, err := rt.cfg.Workspace.ReadFile(p, abs, workspace.MaxReadSize)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrBadSelection, err)
		}
		s = string(b)
	}
	if rng == nil {
		return fmt.Sprintf("%s (%d lines):)\n```\n%s\n```", p.Rel(abs), strings.Count(s, "\n")+1, tools.Cut(s, limit)), nil
	}
	enc := rt.cfg.Workspace.Encoding()
	text := ""
	if from, to := workspace.Offset(s, rng.Start, enc), workspace.Offset(s, rng.End, enc); from <= to {
		text = tools.Cut(s[from:to], limit)
	}
	last := rng.End.Line
	if rng.End.Character == 0 && last > rng.Start.Line {
		last-- // a selection of whole lines ends at the start of the next one
	}
	return fmt.Sprintf("%s lines %d-%d:)\n```\n%s\n```", p.Rel(abs), rng.Start.Line+1, last+1, text), nil
}

// graphConfig is where a run's state lives: the session's thread, the run's
// namespace (a subagent's context), and for the session's own run the session
// index entry written with every checkpoint.
func (rt *Runtime) graphConfig(r *run, maxSteps int) graph.Config {
	if maxSteps <= 0 {
		maxSteps = rt.cfg.MaxSteps
	}
	cfg := graph.Config{Thread: r.session.ID, Namespace: r.contextID, Checkpointer: rt.cfg.Store, StepLimit: maxSteps,
		Accepts: rt.acceptsInput, Events: r.graphEvent, Durability: r.durability}
	if r.contextID == "" {
		cfg.Index = func(s graph.State, status graph.Status) *store.Session {
			sess := r.session
			sess.Status, sess.Updated, sess.Model = status, time.Now(), r.model
			sess.Messages = len(rt.st.messages.Get(s))
			if p := rt.st.project.Get(s); p != "" {
				sess.Project = p
				if proj, ok := rt.cfg.Workspace.Project(p); ok {
					sess.Root = proj.Root()
				}
				if r.iso != nil && p == r.iso.project { // the session goes on in the project, not the worktree
					sess.Project, sess.Root = r.iso.from, r.iso.fromDir
				}
			}
			return &sess
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
	out := Result{Session: r.session.ID, Status: res.Status, Steps: res.Steps, Queued: r.unread(res.Queued)}
	out.Usage, out.Edits = r.acc.totals()
	if res.Status == graph.StatusDone {
		if msgs := rt.st.messages.Get(res.State); len(msgs) > 0 && msgs[len(msgs)-1].Role == message.AI {
			out.Reply = msgs[len(msgs)-1].Content
		}
	}
	if err != nil {
		out.Status, out.Error, out.Reason = graph.StatusFailed, rt.explain(r, err), reasonOf(err)
	}
	if out.Status == graph.StatusLimit {
		out.Limit = cmp.Or(r.acc.stoppedBy(), LimitSteps)
	}
	if out.Status == graph.StatusDone && r.mode == ModePlan {
		out.Plan = out.Reply
	}
	project := r.session.Project
	if p := rt.st.project.Get(res.State); p != "" {
		project = p
	}
	if out.Status != graph.StatusDone || r.iso != nil || !rt.lingering.linger(r.session.ID, r.acc.bg, rt.cfg.BackgroundLinger) {
		r.acc.bg.Close() // the run's background processes end with it
	}
	r.acc.hist.settle(ctx) // their files are in the checkpoints before the run ends
	rt.stopHooks(ctx, r, project, out)
	out.Branch, out.Worktree = rt.commitRun(ctx, r)
	r.emit(event.RunEnd{Status: out.Status, Error: out.Error, Limit: out.Limit, Branch: out.Branch, Worktree: out.Worktree})
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
