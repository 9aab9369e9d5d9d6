package agent

import (
	"fmt"
	"strings"
	"sync"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// promptCache keeps the project part of the system prompt per snapshot version.
type promptCache struct {
	mu      sync.Mutex
	entries map[string]cachedPrompt
}

type cachedPrompt struct {
	key    string
	prompt string
}

// systemPrompt builds the system prompt for the current project from its
// snapshot; the project part is rebuilt only when the snapshot version changes.
func (rt *Runtime) systemPrompt(project string, summary Summary, todos []tools.Todo) string {
	var b strings.Builder
	b.WriteString(`You are agent-lsp, a coding agent working inside the user's editor.
Work in small, verifiable steps: look before you change (list_files, search, read_file), make focused edits with edit_file or create_file, and check your work with run_command "build" or "test" when the project has them.
Every edit goes to the editor, which may refuse it; respect a refusal and say so. Paths are relative to the current project's root; give "project" to work in another project.
Delegate self-contained side tasks to call_subagent. Use todo_write to plan work of more than three steps.
When you are done, answer briefly: what you changed and why, and anything the user must check.
`)
	b.WriteString(rt.projectPrompt(project))
	if summary.Text != "" {
		b.WriteString("\n## Summary of the earlier conversation\n")
		b.WriteString(summary.Text)
		b.WriteString("\n")
	}
	if len(todos) > 0 {
		b.WriteString("\n## Todo list\n")
		for _, t := range todos {
			fmt.Fprintf(&b, "- [%s] %s\n", t.Status, t.Content)
		}
	}
	return b.String()
}

func (rt *Runtime) projectPrompt(project string) string {
	p, ok := rt.cfg.Workspace.Project(project)
	if !ok {
		return "\nNo project is open.\n"
	}
	names := rt.cfg.Workspace.Names()
	snap := p.Snapshot()
	key := fmt.Sprintf("%d|%s", snap.Version, strings.Join(names, ","))
	rt.prompts.mu.Lock()
	defer rt.prompts.mu.Unlock()
	if c, ok := rt.prompts.entries[snap.Name]; ok && c.key == key {
		return c.prompt
	}
	prompt := renderProject(snap, names)
	if rt.prompts.entries == nil {
		rt.prompts.entries = map[string]cachedPrompt{}
	}
	rt.prompts.entries[snap.Name] = cachedPrompt{key: key, prompt: prompt}
	return prompt
}

func renderProject(s workspace.Snapshot, names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Current project: %s\n- path: %s\n- type: %s", s.Name, s.Path, s.Type)
	if len(s.TechStack.Others) > 0 {
		fmt.Fprintf(&b, " (also: %v)", s.TechStack.Others)
	}
	b.WriteString("\n")
	st := s.TechStack
	if st.LanguageVersion != "" {
		fmt.Fprintf(&b, "- language version: %s\n", st.LanguageVersion)
	}
	if st.PackageManager != "" {
		fmt.Fprintf(&b, "- package manager: %s\n", st.PackageManager)
	}
	if st.BuildCommand != "" {
		fmt.Fprintf(&b, "- build: %s (last: %s)\n", st.BuildCommand, outcome(s.Context.LastBuild))
	}
	if st.TestCommand != "" {
		fmt.Fprintf(&b, "- test: %s (last: %s)\n", st.TestCommand, outcome(s.Context.LastTest))
	}
	if s.GitBranch != "" {
		fmt.Fprintf(&b, "- git branch: %s\n", s.GitBranch)
	}
	if len(s.Context.OpenFiles) > 0 {
		fmt.Fprintf(&b, "- open in the editor: %s\n", strings.Join(s.Context.OpenFiles, ", "))
	}
	if len(s.Context.RecentErrors) > 0 {
		b.WriteString("- recent errors:\n")
		for _, e := range s.Context.RecentErrors[:min(5, len(s.Context.RecentErrors))] {
			fmt.Fprintf(&b, "  - %s\n", e)
		}
	}
	var others []string
	for _, n := range names {
		if n != s.Name {
			others = append(others, n)
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "\nOther projects in this workspace: %s\n", strings.Join(others, ", "))
	}
	return b.String()
}

func outcome(o workspace.Outcome) string {
	if o.Summary != "" {
		return string(o.Status) + ", " + o.Summary
	}
	return string(o.Status)
}
