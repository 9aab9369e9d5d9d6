package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

func lastAI(msgs []message.Message) (message.Message, int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.AI {
			return msgs[i], i
		}
	}
	return message.Message{}, -1
}

func toolMessageID(aiID string, i int) string { return fmt.Sprintf("%s-t%d", aiID, i) }

// route sends each unanswered tool call of the newest AI message to its own
// tools task (calls past MaxCallsPerTurn were answered with an error).
func (rt *Runtime) route(s graph.State) []graph.Route {
	msgs := rt.st.messages.Get(s)
	ai, idx := lastAI(msgs)
	if idx < 0 || len(ai.ToolCalls) == 0 {
		return []graph.Route{graph.To(graph.End)}
	}
	answered := map[string]bool{}
	for _, m := range msgs[idx+1:] {
		answered[m.ToolCallID] = true
	}
	var routes []graph.Route
	for i, c := range ai.ToolCalls {
		if !answered[c.ID] {
			routes = append(routes, graph.Send("tools", i))
		}
	}
	if len(routes) == 0 {
		return []graph.Route{graph.To("agent")}
	}
	return routes
}

// agentNode calls the model with the rebuilt system prompt and the history
// that fits the budget (compacting it when it has outgrown it).
func (rt *Runtime) agentNode(ctx context.Context, s graph.State) (graph.Patch, error) {
	r := runFrom(ctx)
	project := rt.st.project.Get(s)
	resp, c, err := rt.chat(ctx, r, s)
	var writes []graph.Write
	if c.compacted {
		writes = append(writes, rt.st.summary.Set(c.summary))
	}
	if err != nil {
		return graph.Patch{}, err
	}
	r.acc.addUsage(resp.Usage)
	ai := message.NewAI(resp.Content, resp.ToolCalls...)
	ai.Name = "ai@" + project
	for i := range ai.ToolCalls {
		if ai.ToolCalls[i].ID == "" {
			ai.ToolCalls[i].ID = fmt.Sprintf("call_%s_%d", ai.ID, i)
		}
		ai.ToolCalls[i].Args = tools.CutArgs(ai.ToolCalls[i].Args)
	}
	r.emit(event.Message{Message: ai})
	out := []message.Message{ai}
	// Calls past the turn's limit are answered at once; route runs the rest.
	for i := tools.MaxCallsPerTurn; i < len(ai.ToolCalls); i++ {
		out = append(out, message.Message{ID: toolMessageID(ai.ID, i), Role: message.Tool, Name: "tool@" + project, ToolCallID: ai.ToolCalls[i].ID,
			Content: fmt.Sprintf("error: not run: at most %d tool calls run in one turn; call it again in the next turn", tools.MaxCallsPerTurn)})
	}
	return graph.NewPatch(append(writes, rt.st.messages.Append(out...))...), nil
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
	env := &tools.Env{Workspace: rt.cfg.Workspace, Session: r.session.ID, Project: project, Editor: r.editor, Permissions: r.perms,
		Trust: trust{recorded: rt.st.commandFilesChanged.Get(s), acc: r.acc}, CommandEnv: rt.cfg.CommandEnv,
		Sandbox: rt.cfg.Sandbox, SandboxSettings: rt.cfg.SandboxSettings, Protected: &rt.guard,
		MaxOutput: rt.cfg.MaxToolOutput, CommandTimeout: rt.cfg.CommandTimeout}
	env.Subagent = func(ctx context.Context, req tools.SubagentRequest) (tools.SubagentResult, error) {
		return rt.subagent(ctx, r, project, call.ID, req)
	}
	r.emit(event.ToolStart{Name: call.Name, Args: call.Args, CallID: call.ID})
	res := r.tools.Call(ctx, env, call)
	if ctx.Err() != nil {
		return graph.Patch{}, ctx.Err()
	}
	for _, e := range res.Edits {
		if e.Applied {
			r.acc.addEdit()
		}
		r.emit(event.Edit{URI: string(uri.File(e.Path)), Applied: e.Applied})
	}
	r.emit(event.ToolEnd{CallID: call.ID, Name: call.Name, OK: !res.IsError, Summary: res.Summary})
	used := usedProject(rt, call, project)
	content := res.Content
	if used != project {
		content = "[project " + used + "] " + content // the model must know where this came from
	}
	tm := message.Message{ID: toolMessageID(ai.ID, i), Role: message.Tool, Name: "tool@" + used, ToolCallID: call.ID, Content: content}
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
	if recorded := rt.st.commandFilesChanged.Get(s); len(res.CommandFilesChanged) > 0 {
		var add []string
		for _, p := range res.CommandFilesChanged {
			if !slices.Contains(recorded, p) && !slices.Contains(add, p) {
				add = append(add, p)
			}
		}
		writes = append(writes, rt.st.commandFilesChanged.Append(add...))
	}
	return graph.NewPatch(writes...), nil
}

// usedProject is the project a tool call worked in: the one its "project"
// argument names, else the current one.
func usedProject(rt *Runtime, call message.ToolCall, current string) string {
	if call.Name == "switch_project" {
		return current
	}
	var a struct {
		Project string `json:"project"`
	}
	if json.Unmarshal([]byte(call.Args), &a) != nil || a.Project == "" || a.Project == current {
		return current
	}
	if _, ok := rt.cfg.Workspace.Project(a.Project); !ok {
		return current
	}
	return a.Project
}
