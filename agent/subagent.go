package agent

import (
	"context"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

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
	limit := 2 * maxLoops // a model turn and a tool round are a step each
	if left, ok := graph.StepsLeft(ctx); ok {
		limit = min(limit, left) // a subagent spends no more than its parent has
	}
	if limit < 1 {
		return tools.SubagentResult{ContextID: id, Result: "no steps are left in this run for a subagent"}, nil
	}
	child.emit(event.SubagentStart{Task: task})
	in := message.NewHuman(task)
	in.Name = "human@" + project
	res, err := rt.graph.Invoke(context.WithValue(ctx, runKey{}, child), rt.graphConfig(child, limit),
		graph.NewPatch(rt.st.messages.Append(in), rt.st.project.Set(project)))
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
