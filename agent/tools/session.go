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

// callSubagentSchema is call_subagent's schema; %s is where the agent
// property goes when the project defines subagents.
const callSubagentSchema = `{"type": "object", "properties": {
		"task": {"type": "string", "description": "Complete instructions for the subagent."},%s
		"max_loops": {"type": "integer", "description": "Most model turns the subagent may take (default 10, at most 50, no more than the agent's definition allows and this run has steps left)."},
		"readOnly": {"type": "boolean", "description": "Give the subagent only the tools that read (read_file, list_files, search, read_image): for research that must change nothing."},
		"isolation": {"type": "string", "enum": ["none", "worktree"], "description": "worktree: work in a new git worktree of the project's HEAD on a branch of its own, committed at the end (the result names the branch); uncommitted changes of the project are not in it."}}, "required": ["task"]}`

const callSubagentDescription = "Delegate a self-contained task to a subagent with a fresh, isolated context (it sees only the task text, not this conversation). " +
	"Returns {ok, result, context_id, loops, note?, branch?, worktree?}. Several calls in one turn run in parallel. Write the task so it can be done alone and say what to report back."

var callSubagent = Tool{
	Name:        "call_subagent",
	Description: callSubagentDescription,
	Schema:      json.RawMessage(fmt.Sprintf(callSubagentSchema, "")),
	Run:         runSubagent,
}

// AgentInfo names a subagent defined in a file, for call_subagent's schema.
type AgentInfo struct {
	Name        string
	Description string
}

// CallSubagent is call_subagent offering the subagents agents define: its
// agent property is an enum of their names, and its description lists them.
func CallSubagent(agents []AgentInfo) Tool {
	if len(agents) == 0 {
		return All()["call_subagent"]
	}
	names := make([]string, len(agents))
	var list strings.Builder
	for i, a := range agents {
		names[i] = a.Name
		fmt.Fprintf(&list, " %s", a.Name)
		if a.Description != "" {
			fmt.Fprintf(&list, " (%s)", a.Description)
		}
		if i < len(agents)-1 {
			list.WriteString(";")
		}
	}
	enum, _ := json.Marshal(names)
	desc, _ := json.Marshal("A subagent defined for this project, with its own instructions and tools:" + list.String() + ". Omit it for a general subagent.")
	t := Tool{Name: "call_subagent", Description: callSubagentDescription + " Give agent to use a subagent defined for this project:" + list.String() + ".",
		Schema: json.RawMessage(fmt.Sprintf(callSubagentSchema, "\n\t\t\"agent\": {\"type\": \"string\", \"enum\": "+string(enum)+", \"description\": "+string(desc)+"},")),
		Run:    runSubagent}
	t.schema = parseSchema(t.Schema)
	return t
}

func runSubagent(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
	var a struct {
		Task      string
		Agent     string
		MaxLoops  int  `json:"max_loops"`
		ReadOnly  bool `json:"readOnly"`
		Isolation string
	}
	if err := decode(args, &a); err != nil {
		return Result{}, err
	}
	if env.Subagent == nil {
		return errorf("subagents are not available here")
	}
	a.MaxLoops = min(max(a.MaxLoops, 0), MaxSubagentLoops)
	res, err := env.Subagent(ctx, SubagentRequest{Task: a.Task, Agent: a.Agent, MaxLoops: a.MaxLoops, ReadOnly: a.ReadOnly, Isolation: a.Isolation})
	if err != nil {
		return Result{}, err
	}
	b, _ := json.Marshal(res)
	summary := fmt.Sprintf("subagent %s ok=%v", res.ContextID, res.OK)
	if a.Agent != "" {
		summary = fmt.Sprintf("subagent %s (%s) ok=%v", res.ContextID, a.Agent, res.OK)
	}
	if res.Branch != "" {
		summary += " branch " + res.Branch
	}
	return Result{Content: string(b), IsError: !res.OK, Summary: summary, CommandFilesChanged: res.CommandFilesChanged}, nil
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
	for _, t := range []Tool{readFile, listFiles, search, editFile, createFile, runCommand, switchProject, callSubagent, todoWrite, readImage, fetchURL,
		processOutput, processWait, processStop, diagnosticsTool, definitionTool, referencesTool, implementationsTool, hoverTool, symbolsTool} {
		t.schema = parseSchema(t.Schema)
		s[t.Name] = t
	}
	return s
}
