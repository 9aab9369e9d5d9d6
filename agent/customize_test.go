//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The instructions are layered: the user's own file, the project root's
// (AGENTS.md, else CLAUDE.md, else .github/copilot-instructions.md), and a
// subfolder's AGENTS.md once the agent reads a file below it, nearest first.
func TestLayeredInstructions(t *testing.T) {
	user := t.TempDir()
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "pkg/parser/parse.go"})}},
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}},
		{Text: "done"}}}, Config{UserDir: user, ContextTokens: 128000})
	root := h.roots["sample"]
	writeFile(t, filepath.Join(user, "AGENTS.md"), "Answer in British English.\n")
	writeFile(t, filepath.Join(root, ".github/copilot-instructions.md"), "Copilot says: use table tests.\n")
	writeFile(t, filepath.Join(root, "pkg/AGENTS.md"), "The pkg folder: exported names need doc comments.\n")
	writeFile(t, filepath.Join(root, "pkg/parser/AGENTS.md"), "The parser: never allocate in the hot loop.\n")
	writeFile(t, filepath.Join(root, "pkg/parser/parse.go"), "package parser\n")
	writeFile(t, filepath.Join(root, "docs/AGENTS.md"), "Docs: never reached.\n")
	h.run(context.Background(), Request{Prompt: "look"})
	reqs := h.srv.Requests()
	first, second := reqs[0].Messages[0].Content, reqs[1].Messages[0].Content
	for _, want := range []string{"## Your user's instructions (" + filepath.Join(user, "AGENTS.md") + ")", "Answer in British English.",
		"## Project instructions (.github/copilot-instructions.md, repository content)", "Copilot says: use table tests."} {
		if !strings.Contains(first, want) {
			t.Fatalf("first request lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "hot loop") || strings.Contains(first, "doc comments") {
		t.Fatalf("nested instructions before any read below them:\n%s", first)
	}
	parser := strings.Index(second, "## Project instructions (pkg/parser/AGENTS.md, repository content)")
	pkg := strings.Index(second, "## Project instructions (pkg/AGENTS.md, repository content)")
	rootAt := strings.Index(second, "## Project instructions (.github/copilot-instructions.md")
	userAt := strings.Index(second, "## Your user's instructions")
	if parser < 0 || pkg < 0 || !(userAt < parser && parser < pkg && pkg < rootAt) {
		t.Fatalf("user %d, parser %d, pkg %d, root %d:\n%s", userAt, parser, pkg, rootAt, second)
	}
	if strings.Contains(second, "never reached") || !strings.Contains(second, "<repository-instructions file=\"pkg/parser/AGENTS.md\">") {
		t.Fatalf("%s", second)
	}
	// AGENTS.md wins over the others at the root.
	writeFile(t, filepath.Join(root, "AGENTS.md"), "Root AGENTS.\n")
	if s := systemPromptOfARun(h); !strings.Contains(s, "Root AGENTS.") || strings.Contains(s, "Copilot says") {
		t.Fatalf("%s", s)
	}
}

// Instruction files that do not fit the budget are left out, nearest kept
// first, and the prompt names what was left out.
func TestInstructionsLeftOutForRoom(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "a/b/x.go"})}},
		{Text: "done"}}}, Config{ContextTokens: 8192})
	root := h.roots["sample"]
	writeFile(t, filepath.Join(root, "AGENTS.md"), sourceText(7000))
	writeFile(t, filepath.Join(root, "a/AGENTS.md"), sourceText(8000))
	writeFile(t, filepath.Join(root, "a/b/AGENTS.md"), "Nearest: b.\n")
	writeFile(t, filepath.Join(root, "a/b/x.go"), "package b\n")
	h.run(context.Background(), Request{Prompt: "look"})
	sys := h.srv.Requests()[1].Messages[0].Content
	if !strings.Contains(sys, "Nearest: b.") || !strings.Contains(sys, "(a/AGENTS.md is 8000 bytes; its head and tail are shown.") {
		t.Fatalf("nearest files not first:\n%s", sys)
	}
	if !strings.Contains(sys, "Instruction files left out for room: AGENTS.md (") {
		t.Fatalf("no note of what was left out:\n%s", sys)
	}
}

// A subagent defined in .agents/agents runs with its own system prompt,
// exactly the tools it lists, and its model when the settings allow it;
// else the parent's, with a note.
func TestCustomSubagent(t *testing.T) {
	for _, allowed := range []bool{true, false} {
		var models []string
		if allowed {
			models = []string{"reviewer-*"}
		}
		h := newHarness(t, scripted.Script{Conversations: []scripted.Conversation{
			{Match: "Review greet.go", Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}},
				{Text: "LGTM"}}},
			{Match: "review it", Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("call_subagent", map[string]any{"task": "Review greet.go", "agent": "reviewer"})}},
				{Text: "reviewed"}}},
		}}, Config{SubagentModels: models, ModelName: "main-model"})
		writeFile(t, filepath.Join(h.roots["sample"], ".agents/agents/reviewer.md"),
			"---\nname: reviewer\ndescription: Reviews Go code\ntools: [read_file, search]\nmodel: reviewer-small\n---\nYou are a strict reviewer. Report problems as a list.\n")
		res := h.run(context.Background(), Request{Prompt: "review it"})
		if res.Status != "done" || res.Reply != "reviewed" {
			t.Fatalf("%+v", res)
		}
		reqs := h.srv.Requests()
		var parent, child []int
		for i, r := range reqs {
			if strings.Contains(r.Messages[1].Content, "Review greet.go") {
				child = append(child, i)
			} else {
				parent = append(parent, i)
			}
		}
		if len(child) != 2 || len(parent) != 2 {
			t.Fatalf("parent %v child %v", parent, child)
		}
		// The parent's call_subagent offers the agent.
		var schema string
		for _, tl := range reqs[parent[0]].Tools {
			if tl.Function.Name == "call_subagent" {
				b, _ := json.Marshal(tl.Function)
				schema = string(b)
			}
		}
		if !strings.Contains(schema, `"enum":["reviewer"]`) || !strings.Contains(schema, "reviewer (Reviews Go code)") {
			t.Fatalf("call_subagent: %s", schema)
		}
		c := reqs[child[0]]
		sys := c.Messages[0].Content
		if !strings.Contains(sys, `You are "reviewer", a subagent of agent-lsp`) || !strings.Contains(sys, "You are a strict reviewer.") ||
			!strings.Contains(sys, "## Your role (.agents/agents/reviewer.md, repository content)") {
			t.Fatalf("subagent system prompt:\n%s", sys)
		}
		var names []string
		for _, tl := range c.Tools {
			names = append(names, tl.Function.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"read_file", "search"}) {
			t.Fatalf("subagent tools %v", names)
		}
		result := toolMessages(reqs[parent[1]])[0].Content
		want := "main-model"
		if allowed {
			want = "reviewer-small"
			if strings.Contains(result, "note") {
				t.Fatalf("note when allowed: %s", result)
			}
		} else if !strings.Contains(result, `asks for the model reviewer-small, which the subagents.models setting does not allow`) {
			t.Fatalf("no note: %s", result)
		}
		if c.Model != want || reqs[parent[0]].Model != "main-model" {
			t.Fatalf("allowed %v: subagent model %q, parent %q", allowed, c.Model, reqs[parent[0]].Model)
		}
	}
}

// An unknown agent is an error result the model reads; the run goes on.
func TestUnknownSubagent(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("call_subagent", map[string]any{"task": "x", "agent": "nobody"})}},
		{Text: "ok"}}}, Config{})
	writeFile(t, filepath.Join(h.roots["sample"], ".claude/agents/tester.md"), "You test.\n")
	res := h.run(context.Background(), Request{Prompt: "go"})
	tm := toolMessages(h.srv.Requests()[1])[0].Content
	if res.Status != "done" || !strings.Contains(tm, `no subagent \"nobody\" is defined for project sample (defined: tester)`) {
		t.Fatalf("%+v %s", res, tm)
	}
}

// A command's allowed tools narrow the run's tools.
func TestRunToolsNarrowed(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}}, Config{})
	h.run(context.Background(), Request{Prompt: "go", Tools: []string{"read", "Bash(git status:*)"}})
	var names []string
	for _, tl := range h.srv.Requests()[0].Tools {
		names = append(names, tl.Function.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"list_files", "read_file", "run_command", "search"}) {
		t.Fatalf("%v", names)
	}
}

// A command's @path references attach the project's files; one that leads
// out of the project is refused, and nothing of it is read.
func TestExpandCommandReferences(t *testing.T) {
	h := newHarness(t, scripted.Script{}, Config{})
	root := h.roots["sample"]
	os.Symlink("/etc/passwd", filepath.Join(root, "passwd-link"))
	cmds := func() map[string]int {
		list, err := h.rt.Commands("sample")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for i, c := range list {
			m[c.Name] = i
		}
		return m
	}
	writeFile(t, filepath.Join(root, ".agents/commands/explain.md"), "Explain @greet.go to me, and @nothing-here.\n")
	writeFile(t, filepath.Join(root, ".agents/commands/leak.md"), "Read @../../etc/passwd\n")
	writeFile(t, filepath.Join(root, ".agents/commands/link.md"), "Read @passwd-link\n")
	list, _ := h.rt.Commands("sample")
	idx := cmds()
	text, err := h.rt.ExpandCommand("sample", list[idx["explain"]], "")
	if err != nil || !strings.Contains(text, "(@greet.go is attached:)\n```\npackage sample") || !strings.Contains(text, "@nothing-here") {
		t.Fatalf("%v\n%s", err, text)
	}
	for _, name := range []string{"leak", "link"} {
		text, err := h.rt.ExpandCommand("sample", list[idx[name]], "")
		if !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), "nothing was read") || strings.Contains(text, "root:") {
			t.Fatalf("%s: %v %q", name, err, text)
		}
	}
}
