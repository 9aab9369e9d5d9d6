package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/agent-lsp/agent-lsp/agent/custom"
	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/hooks"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// run is one invocation's context, reached by nodes through ctx: the
// session, which context (the session's own run or a subagent) is running,
// the ports, and what the whole run (subagents included) accumulates.
type run struct {
	rt         *Runtime
	session    store.Session
	contextID  string // "" for the session's own run
	parentID   string
	editor     tools.Editor
	perms      tools.Permissions
	lang       tools.Language // nil: none
	tools      tools.Set
	acc        *accumulator
	specs      []model.ToolSpec // the tools the model is shown: those that fit the budget
	withheld   []string         // the tools that did not
	specTokens int              // the estimated tokens of specs
	base       tools.Set        // the runtime's tools, without the tool source's (set once it added some)
	model      string           // the model of this run: the request's, the session's, else the configured one
	budget     *budget          // that model's context, as learned
	restored   bool             // the session's stored project context was restored (first step)
	durability store.Durability // the request's ("": the store's default), its subagents' too
	persona    *custom.Agent    // the subagent's definition in a file; nil for the session's run and general subagents
	allowed    []string         // the tools a slash command allows (names or groups); nil: all
	format     json.RawMessage  // the session's own run: the answer's JSON Schema (Request.OutputSchema)
	live       *Live            // the session's own run: its live session (set once, before its graph starts); nil for a subagent
	mode       Mode             // what the run may do (ModeAgent, ModePlan, ModeAsk); its subagents' too
	modeless   tools.Set        // the run's tools before its mode narrowed them (refuseUnoffered names what the mode withheld)
	iso        *isolated        // the worktree it works in, set before its graph starts; nil: none
}

// accumulator is shared by a run and its subagents.
type accumulator struct {
	mu      sync.Mutex // guards usage, spend, edits, changed and hooks, and serializes events
	usage   model.Usage
	spend   spending // against the run's limits
	edits   int
	changed map[string]bool       // projects whose command files the run changed
	hooks   map[string]*hooks.Set // the hooks of the run's projects, by name (nil: none)
	events  func(event.Event)
	bg      *tools.Background // the run's background processes, stopped by finish; set once by newRun
	hist    *historyRecorder  // the session's rewind history (checkpoints.go); set once by newRun
}

func (a *accumulator) emit(e event.Event) {
	if a.events == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events(e)
}

// addUsage adds a model call's usage and returns the run's so far.
func (a *accumulator) addUsage(u model.Usage) model.Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.usage = a.usage.Add(u)
	return a.usage
}

// used accounts for one model call: priced when the price table has the
// model, added to the run's usage, and reported as a usage event.
func (r *run) used(u model.Usage) {
	if p, ok := r.rt.cfg.Prices[r.model]; ok {
		u.Cost = p.Cost(u)
	}
	total := r.acc.addUsage(u)
	r.emit(event.Usage{Model: r.model, Prompt: u.PromptTokens, Completion: u.CompletionTokens, Total: u.TotalTokens,
		ContextTokens: r.budget.limit(), Cost: u.Cost,
		Run:    event.RunUsage{Prompt: total.PromptTokens, Completion: total.CompletionTokens, Total: total.TotalTokens, Cost: total.Cost},
		Budget: r.acc.budget()})
}

func (a *accumulator) addEdit() {
	a.mu.Lock()
	a.edits++
	a.mu.Unlock()
}

func (a *accumulator) changeCommandFiles(project string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.changed == nil {
		a.changed = map[string]bool{}
	}
	a.changed[project] = true
}

func (a *accumulator) commandFilesChanged(project string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed[project]
}

func (a *accumulator) changedProjects() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.changed))
	for p := range a.changed {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// trust is a task's tools.Trust: what the session's checkpoints recorded
// (state), and what this run and its subagents changed since (immediately,
// before the step that did it is checkpointed).
type trust struct {
	recorded []string
	acc      *accumulator
}

func (t trust) Changed(project string) bool {
	return slices.Contains(t.recorded, project) || t.acc.commandFilesChanged(project)
}

func (t trust) Change(project string) { t.acc.changeCommandFiles(project) }

func (a *accumulator) totals() (model.Usage, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usage, a.edits
}

func (rt *Runtime) newRun(sess store.Session, req Request, project string) *run {
	name := cmp.Or(req.Model, sess.Model, rt.cfg.ModelName)
	lang := req.Language
	if lang == nil {
		lang = rt.cfg.Language
	}
	set := rt.cfg.Tools
	if p, ok := rt.cfg.Workspace.Project(project); lang == nil || ok && !offers(lang, p) {
		set = set.Without(tools.LangTools...) // they could only say that nothing answers
	}
	return &run{rt: rt, session: sess, editor: req.Editor, perms: req.Permissions, lang: lang, tools: set,
		acc: &accumulator{events: req.Events, spend: spending{limits: req.Limits}, bg: rt.newBackground(sess.ID), hist: rt.newHistoryRecorder(sess.ID, req.Durability)}, mode: cmp.Or(req.Mode, Mode(sess.Mode), ModeAgent), model: name, budget: rt.budgetFor(name), durability: req.Durability, allowed: req.Tools,
		format: req.OutputSchema}
}

// offers reports whether lang may answer for p: a source that knows
// (tools.LangOffer) says so; others may.
func offers(lang tools.Language, p *workspace.Project) bool {
	if o, ok := lang.(tools.LangOffer); ok {
		return o.Offers(p) == nil
	}
	return true
}

// addTools adds the tool source's tools for project to the run's (the
// runtime's own win a name clash), then customizes them (customize).
func (rt *Runtime) addTools(ctx context.Context, r *run, project string) {
	defer rt.customize(r, project)
	if rt.cfg.ToolSource == nil {
		return
	}
	if r.base == nil {
		r.base = r.tools
	}
	p, ok := rt.cfg.Workspace.Project(project)
	if !ok {
		r.tools = r.base
		return
	}
	extra := rt.cfg.ToolSource.Tools(ctx, p)
	set := make(tools.Set, len(r.base)+len(extra))
	for name, t := range extra {
		set[name] = t
	}
	for name, t := range r.base {
		set[name] = t
	}
	r.tools = set
}

// refreshTools takes the tool source's current tools at a step (a server
// announced a changed list, the run moved to another project) and fits
// them again when they changed.
func (rt *Runtime) refreshTools(ctx context.Context, r *run, project string) {
	if rt.cfg.ToolSource == nil {
		return
	}
	before := r.tools
	rt.addTools(ctx, r, project)
	if len(before) != len(r.tools) || !sameNames(before, r.tools) {
		rt.showTools(r, project)
	}
}

func sameNames(a, b tools.Set) bool {
	for name := range a {
		if _, ok := b[name]; !ok {
			return false
		}
	}
	return true
}

// emit sends one event of this run (or subagent).
func (r *run) emit(d event.Data) {
	e := event.Event{Session: r.session.ID, Data: d}
	if r.contextID != "" {
		e.ContextID, e.ParentID = r.contextID, r.parentID
	}
	r.acc.emit(e)
}

type runKey struct{}

func runFrom(ctx context.Context) *run { return ctx.Value(runKey{}).(*run) }
