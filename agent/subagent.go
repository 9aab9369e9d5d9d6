package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-lsp/agent-lsp/agent/custom"
	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
)

// SubagentID is the context ID of the subagent that call index of the AI
// message aiID starts in session: "subagent-" and 8 hex digits of a hash of
// the three, so a parent resumed after a crash resumes the same child
// instead of starting another, and two calls never share a context even
// when a model repeats its call IDs.
func SubagentID(session, aiID string, index int) string {
	sum := sha256.Sum256([]byte(session + "\x00" + aiID + "\x00" + strconv.Itoa(index)))
	return "subagent-" + hex.EncodeToString(sum[:4])
}

// legacySubagentID is the context ID sessions stored before SubagentID:
// derived from the model's call ID alone.
func legacySubagentID(callID string) string {
	var b strings.Builder
	for _, r := range callID {
		if r < 0x80 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	return "subagent-" + b.String()
}

// subagentContext is the context of call index of AI message aiID: its
// SubagentID, unless the store holds the child under the ID an older
// version gave it (an in-flight child of a stored session keeps it).
func (rt *Runtime) subagentContext(ctx context.Context, session, aiID string, index int, callID string) string {
	id := SubagentID(session, aiID, index)
	if _, err := rt.cfg.Store.Load(ctx, session, id); errors.Is(err, store.ErrNotFound) {
		if old := legacySubagentID(callID); old != "subagent-" {
			if _, err := rt.cfg.Store.Load(ctx, session, old); err == nil {
				return old
			}
		}
	}
	return id
}

// subagent runs a task in its own context (a namespace of the session): a
// new one, or the one a crashed parent had started for the same call.
func (rt *Runtime) subagent(ctx context.Context, parent *run, project, id string, req tools.SubagentRequest) (tools.SubagentResult, error) {
	select {
	case rt.subSem <- struct{}{}:
		defer func() { <-rt.subSem }()
	case <-ctx.Done():
		return tools.SubagentResult{}, ctx.Err()
	}
	parentID := parent.contextID
	if parentID == "" {
		parentID = parent.session.ID
	}
	child, note, cerr := rt.childRun(parent, project, id, parentID, &req)
	if cerr == nil {
		project, cerr = rt.isolateChild(ctx, child, project, id, req)
	}
	if cerr != nil {
		return tools.SubagentResult{ContextID: id, Result: cerr.Error()}, nil
	}
	defer rt.commitChild(ctx, child, id)
	limit := 2 * req.MaxLoops // a model turn and a tool round are a step each
	if left, ok := graph.StepsLeft(ctx); ok {
		limit = min(limit, left) // a subagent spends no more than its parent has
	}
	if limit < 1 {
		return tools.SubagentResult{ContextID: id, Result: "no steps are left in this run for a subagent"}, nil
	}
	child.emit(event.SubagentStart{Task: req.Task})
	cctx := context.WithValue(ctx, runKey{}, child)
	var res graph.Result
	var err error
	if _, lerr := rt.cfg.Store.Load(ctx, parent.session.ID, id); errors.Is(lerr, store.ErrNotFound) {
		in := message.Message{ID: id + "-task", Role: message.Human, Name: "human@" + project, Content: req.Task}
		res, err = rt.graph.Invoke(cctx, rt.graphConfig(child, limit),
			graph.NewPatch(rt.st.messages.Append(in), rt.st.project.Set(project), rt.st.runStart.Set(in.ID)))
	} else {
		res, err = rt.graph.Resume(cctx, rt.graphConfig(child, limit)) // the same child, where it stopped
	}
	if ctx.Err() != nil {
		child.emit(event.SubagentEnd{OK: false, Status: graph.StatusCancelled, Branch: rt.commitChild(ctx, child, id).Branch})
		return tools.SubagentResult{}, ctx.Err()
	}
	out := tools.SubagentResult{OK: err == nil && res.Status == graph.StatusDone, ContextID: id, Note: note}
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
	out.CommandFilesChanged = parent.acc.changedProjects()
	if wt := rt.commitChild(ctx, child, id); wt.Branch != "" {
		out.Branch, out.Worktree = wt.Branch, wt.Summary
	}
	child.emit(event.SubagentEnd{OK: out.OK, Status: res.Status, Branch: out.Branch})
	return out, nil
}

// childRun is the run of a subagent of parent: the general one, or the one
// req.Agent names, with exactly the tools its definition lists of the
// parent's (never more; read-only when asked or set), its model when it may
// choose it, and its loop limit (req.MaxLoops set). note says what differs
// from what the definition asked for.
func (rt *Runtime) childRun(parent *run, project, id, parentID string, req *tools.SubagentRequest) (*run, string, error) {
	set := parent.tools.Without("call_subagent")
	name := parent.model
	var persona *custom.Agent
	var notes []string
	loops := tools.DefaultSubagentLoops
	if req.Agent != "" {
		agents := rt.agents(project)
		i := slices.IndexFunc(agents, func(a custom.Agent) bool { return a.Name == req.Agent })
		if i < 0 {
			names := make([]string, len(agents))
			for j, a := range agents {
				names[j] = a.Name
			}
			return nil, "", fmt.Errorf("error: no subagent %q is defined for project %s (defined: %s)", req.Agent, project, strings.Join(names, ", "))
		}
		persona = &agents[i]
		if persona.Tools != nil {
			chosen, unknown := custom.SelectTools(persona.Tools, slices.Collect(maps.Keys(set)))
			narrowed := tools.Set{}
			for _, n := range chosen {
				narrowed[n] = set[n]
			}
			set = narrowed
			if len(unknown) > 0 {
				notes = append(notes, fmt.Sprintf("%s names tools that do not exist here: %s", persona.Path, strings.Join(unknown, ", ")))
			}
		}
		if m := persona.Model; m != "" && m != name {
			if persona.Source == custom.User || rt.ModelAllowed(m) {
				name = m
			} else {
				notes = append(notes, fmt.Sprintf("%s asks for the model %s, which the subagents.models setting does not allow for a repository's subagent: it ran on %s", persona.Path, m, name))
				rt.cfg.Log("session %s: subagent %s: %s", parent.session.ID, persona.Name, notes[len(notes)-1])
			}
		}
		if persona.MaxLoops > 0 {
			loops = min(persona.MaxLoops, tools.MaxSubagentLoops)
		}
	}
	if name != parent.model && rt.checkPrice(parent.acc.spend.limits, name) != nil { // limits are set once, before the run
		notes = append(notes, fmt.Sprintf("the run has a cost limit and the prices setting has no price for %s: it ran on %s", name, parent.model))
		name = parent.model
	}
	if req.MaxLoops <= 0 {
		req.MaxLoops = loops
	} else if persona != nil && persona.MaxLoops > 0 {
		req.MaxLoops = min(req.MaxLoops, loops) // the definition bounds the call
	}
	if req.ReadOnly || rt.cfg.SubagentsReadOnly {
		ro := tools.Set{}
		for _, n := range tools.ReadOnlyTools {
			if t, ok := set[n]; ok {
				ro[n] = t
			}
		}
		set = ro
	}
	child := &run{rt: rt, session: parent.session, contextID: id, parentID: parentID, editor: parent.editor, perms: parent.perms, lang: parent.lang, model: name, budget: rt.budgetFor(name),
		tools: set, acc: parent.acc, persona: persona, durability: parent.durability, mode: parent.mode}
	child.fitTools()
	return child, strings.Join(notes, "; "), nil
}
