package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

var switchProject = Tool{
	Name:        "switch_project",
	Description: "Make another project of the workspace the current one; later tools work there by default.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"project": {"type": "string", "description": "Name of the project to switch to."}}, "required": ["project"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct{ Project string }
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, err := env.project(a.Project)
		if err != nil {
			return errorf("%v", err)
		}
		s := p.Snapshot()
		return Result{Content: fmt.Sprintf("current project is now %s (%s, %s)", s.Name, s.Type, s.Path),
			Summary: "switched to " + s.Name, SwitchTo: s.Name}, nil
	},
}

var callSubagent = Tool{
	Name: "call_subagent",
	Description: "Delegate a self-contained task to a subagent with a fresh, isolated context (it sees only the task text, not this conversation). " +
		"Returns {ok, result, context_id, loops}. Several calls in one turn run in parallel. Write the task so it can be done alone and say what to report back.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"task": {"type": "string", "description": "Complete instructions for the subagent."},
		"max_loops": {"type": "integer", "description": "Most model turns the subagent may take (default 10, at most 50, and no more than this run has steps left)."},
		"readOnly": {"type": "boolean", "description": "Give the subagent only the tools that read (read_file, list_files, search): for research that must change nothing."}}, "required": ["task"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct {
			Task     string
			MaxLoops int  `json:"max_loops"`
			ReadOnly bool `json:"readOnly"`
		}
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		if env.Subagent == nil {
			return errorf("subagents are not available here")
		}
		if a.MaxLoops <= 0 {
			a.MaxLoops = 10
		}
		a.MaxLoops = min(a.MaxLoops, MaxSubagentLoops)
		res, err := env.Subagent(ctx, SubagentRequest{Task: a.Task, MaxLoops: a.MaxLoops, ReadOnly: a.ReadOnly})
		if err != nil {
			return Result{}, err
		}
		b, _ := json.Marshal(res)
		return Result{Content: string(b), IsError: !res.OK, Summary: fmt.Sprintf("subagent %s ok=%v", res.ContextID, res.OK),
			CommandFilesChanged: res.CommandFilesChanged}, nil
	},
}

var todoWrite = Tool{
	Name:        "todo_write",
	Description: "Replace the run's todo list, to plan multi-step work and track progress. Each item has content and status (pending, in_progress, completed).",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"todos": {"type": "array", "items": {"type": "object", "properties": {"content": {"type": "string"}, "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}}, "required": ["content", "status"]}}},
		"required": ["todos"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct{ Todos []Todo }
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		var out strings.Builder
		done := 0
		for _, t := range a.Todos {
			switch t.Status {
			case "pending", "in_progress", "completed":
			default:
				return errorf("todo %q has status %q; use pending, in_progress or completed", t.Content, t.Status)
			}
			mark := map[string]string{"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}[t.Status]
			if t.Status == "completed" {
				done++
			}
			fmt.Fprintf(&out, "%s %s\n", mark, t.Content)
		}
		todos := a.Todos
		return Result{Content: out.String(), Summary: fmt.Sprintf("todos %d/%d done", done, len(todos)), Todos: &todos}, nil
	},
}

// All returns every tool.
func All() Set {
	s := Set{}
	for _, t := range []Tool{readFile, listFiles, search, editFile, createFile, runCommand, switchProject, callSubagent, todoWrite,
		diagnosticsTool, definitionTool, referencesTool, implementationsTool, hoverTool, symbolsTool} {
		t.schema = parseSchema(t.Schema)
		s[t.Name] = t
	}
	return s
}
