package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

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
	set := parent.tools.Without("call_subagent")
	if req.ReadOnly || rt.cfg.SubagentsReadOnly {
		set = tools.Set{}
		for _, n := range tools.ReadOnlyTools {
			if t, ok := parent.tools[n]; ok {
				set[n] = t
			}
		}
	}
	child := &run{rt: rt, session: parent.session, contextID: id, parentID: parentID, editor: parent.editor, perms: parent.perms, lang: parent.lang, model: parent.model, budget: parent.budget,
		tools: set, acc: parent.acc}
	child.fitTools()
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
		child.emit(event.SubagentEnd{OK: false, Status: graph.StatusCancelled})
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
	out.CommandFilesChanged = parent.acc.changedProjects()
	child.emit(event.SubagentEnd{OK: out.OK, Status: res.Status})
	return out, nil
}
