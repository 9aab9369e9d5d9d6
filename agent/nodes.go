package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
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

// route sends the unanswered tool calls of the newest AI message to tools
// tasks that run in parallel (calls past MaxCallsPerTurn were answered with
// an error). Calls of the file tools on one file go to one task, in the
// order the model made them: a second edit of a file is computed against
// what the first left, and a read after an edit sees it.
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
	var open []int // the calls to run
	for i, c := range ai.ToolCalls {
		if !answered[c.ID] {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		return []graph.Route{graph.To("agent")}
	}
	if len(open) == 1 { // a group of its own: no need to read which file it works on
		return []graph.Route{graph.Send("tools", open)}
	}
	project := rt.st.project.Get(s)
	var groups [][]int
	byFile := map[string]int{} // file key -> its group
	for _, i := range open {
		if key := fileKey(rt, ai.ToolCalls[i], project); key != "" {
			if g, ok := byFile[key]; ok {
				groups[g] = append(groups[g], i)
				continue
			}
			byFile[key] = len(groups)
		}
		groups = append(groups, []int{i})
	}
	routes := make([]graph.Route, len(groups))
	for k, g := range groups {
		routes[k] = graph.Send("tools", g)
	}
	return routes
}

// fileTools are the tools whose calls on one file run in order.
var fileTools = []string{"read_file", "edit_file", "create_file"}

// fileKey names the file a file tool's call works on ("" for other calls).
func fileKey(rt *Runtime, c message.ToolCall, current string) string {
	if !slices.Contains(fileTools, c.Name) {
		return ""
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(c.Args), &a) != nil || a.Path == "" {
		return ""
	}
	return usedProject(rt, c, current) + "\x00" + path.Clean(filepath.ToSlash(a.Path))
}

// agentNode calls the model with the rebuilt system prompt and the history
// that fits the budget (compacting it when it has outgrown it).
func (rt *Runtime) agentNode(ctx context.Context, s graph.State) (graph.Patch, error) {
	r := runFrom(ctx)
	project := rt.st.project.Get(s)
	var writes []graph.Write
	if r.contextID == "" {
		rt.refreshTools(ctx, r, project) // a subagent keeps the tools it started with
		writes = append(writes, rt.keepProjects(r, s)...)
	}
	resp, c, err := rt.chat(ctx, r, s)
	if c.compacted {
		writes = append(writes, rt.st.summary.Set(c.summary))
	}
	if err != nil {
		return graph.Patch{}, err
	}
	r.used(resp.Usage)
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

// toolsNode runs tool calls of the newest AI message, in the order its
// argument lists them (one, or the calls on one file).
func (rt *Runtime) toolsNode(ctx context.Context, s graph.State) (graph.Patch, error) {
	r := runFrom(ctx)
	var seq []int
	if err := s.Arg(&seq); err != nil {
		var i int // a task planned before calls were grouped
		if s.Arg(&i) != nil {
			return graph.Patch{}, err
		}
		seq = []int{i}
	}
	msgs := rt.st.messages.Get(s)
	ai, idx := lastAI(msgs)
	var writes []graph.Write
	var tms []message.Message
	var changed []string
	for k, i := range seq {
		if idx < 0 || i < 0 || i >= len(ai.ToolCalls) {
			return graph.Patch{}, fmt.Errorf("tool call %d not found", i)
		}
		tm, w, files, err := rt.runCall(ctx, r, s, ai, i, seq[k+1:])
		if err != nil {
			return graph.Patch{}, err
		}
		tms = append(tms, tm)
		writes = append(writes, w...)
		changed = append(changed, files...)
	}
	writes = append(writes, rt.st.messages.Append(tms...))
	if recorded := rt.st.commandFilesChanged.Get(s); len(changed) > 0 {
		var add []string
		for _, p := range changed {
			if !slices.Contains(recorded, p) && !slices.Contains(add, p) {
				add = append(add, p)
			}
		}
		writes = append(writes, rt.st.commandFilesChanged.Append(add...))
	}
	return graph.NewPatch(writes...), nil
}

// runCall runs call i of ai (rest follow it in its task) and returns its
// tool message, the state it sets (the project, the todos) and the
// projects whose command files it changed.
func (rt *Runtime) runCall(ctx context.Context, r *run, s graph.State, ai message.Message, i int, rest []int) (message.Message, []graph.Write, []string, error) {
	call := ai.ToolCalls[i]
	project := rt.st.project.Get(s)
	env := &tools.Env{Workspace: rt.cfg.Workspace, Session: r.session.ID, Project: project, Editor: r.editor, Permissions: r.perms,
		Trust: trust{recorded: rt.st.commandFilesChanged.Get(s), acc: r.acc}, CommandEnv: rt.cfg.CommandEnv,
		Sandbox: rt.cfg.Sandbox, SandboxSettings: rt.cfg.SandboxSettings,
		MaxOutput: rt.cfg.MaxToolOutput, CommandTimeout: rt.cfg.CommandTimeout,
		Vision: func(ctx context.Context) error { return rt.vision(ctx, r.model) }, ImageMaxBytes: rt.cfg.ImageMaxBytes, Fetch: rt.cfg.Fetch,
		Background: r.acc.bg}
	if r.lang != nil {
		env.Lang = &tools.Lang{Source: r.lang, Seen: &rt.langSeen}
	}
	if r.mode.readOnly() {
		env.SandboxSettings.Mode = sandbox.ReadOnly // commands only read (modeTools offers them only where this holds)
		env.RulesOnly = string(r.mode)              // and run only where the rules allow them: never after asking
	}
	env.Subagent = func(ctx context.Context, req tools.SubagentRequest) (tools.SubagentResult, error) {
		return rt.subagent(ctx, r, project, rt.subagentContext(ctx, r.session.ID, ai.ID, i, call.ID), req)
	}
	sp := rt.spoolFor(r.session.ID, toolMessageID(ai.ID, i))
	scan := r.acc.hist.commandWatch(usedProject(rt, call, project)) // the files a command changes (cmdscan.go)
	scan.attach(env, r.acc.hist.intentPort(rt.intentPort(ai, i, sp)))
	if sp != nil && call.Name == "run_command" {
		env.Output = sp
		defer sp.close()
	}
	r.emit(event.ToolStart{Name: call.Name, Args: call.Args, CallID: call.ID})
	res := rt.callTool(ctx, r, env, ai, i, rest)
	if note := scan.finish(ctx); note != "" {
		res.Content += "\n[" + note + "]"
	}
	if ctx.Err() != nil {
		return message.Message{}, nil, nil, ctx.Err()
	}
	if call.Name == "call_subagent" && r.acc.stoppedBy() != "" {
		// The subagent stopped at the run's budget: so does the run, and a
		// resume runs this call again, which resumes the subagent.
		return message.Message{}, nil, nil, fmt.Errorf("subagent: %w", graph.ErrStop)
	}
	for _, e := range res.Edits {
		if e.Applied {
			r.acc.addEdit()
		}
		r.emit(event.Edit{URI: string(uri.File(e.Path)), Applied: e.Applied})
	}
	end := event.ToolEnd{CallID: call.ID, Name: call.Name, OK: !res.IsError, Summary: res.Summary, Output: event.Tail(res.Content)}
	if d := res.Denied; d != nil {
		end.Denied = &event.Denial{What: d.What, RuleHint: d.Hint}
	}
	r.emit(end)
	used := usedProject(rt, call, project)
	content := res.Content
	if used != project {
		content = "[project " + used + "] " + content // the model must know where this came from
	}
	tm := message.Message{ID: toolMessageID(ai.ID, i), Role: message.Tool, Name: "tool@" + used, ToolCallID: call.ID, Content: content,
		Images: refs(res.Images)}
	var writes []graph.Write
	if len(res.Images) > 0 {
		writes = append(writes, rt.st.images.Add(res.Images...))
	}
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
	if !res.IsError {
		if dirs := rt.reachedInstructions(s, call, used); len(dirs) > 0 {
			writes = append(writes, rt.st.instructionDirs.Append(dirs...))
		}
	}
	return tm, writes, res.CommandFilesChanged, nil
}

// reachedInstructions are the folders between the file a read or edit call
// worked on (in project) and the project's root, the root excluded, that
// hold an AGENTS.md the run had not reached yet.
func (rt *Runtime) reachedInstructions(s graph.State, call message.ToolCall, project string) []string {
	if !slices.Contains(fileTools, call.Name) {
		return nil
	}
	var a struct {
		Path string `json:"path"`
	}
	p, ok := rt.cfg.Workspace.Project(project)
	if json.Unmarshal([]byte(call.Args), &a) != nil || a.Path == "" || !ok {
		return nil
	}
	abs, err := p.Resolve(a.Path)
	if err != nil {
		return nil
	}
	known := rt.st.instructionDirs.Get(s)
	var out []string
	for dir := filepath.Dir(abs); dir != p.Root() && strings.HasPrefix(dir, p.Root()+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if slices.Contains(known, dir) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, NestedInstructions)); err == nil && !fi.IsDir() {
			out = append(out, dir)
		}
	}
	return out
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
