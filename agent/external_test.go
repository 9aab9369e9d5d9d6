//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// fakeSource provides one external tool per project, which echoes its
// arguments.
type fakeSource struct {
	calls    []string
	withheld [][]string // what each fitting left out, in order
}

func (f *fakeSource) Withheld(_ *workspace.Project, names []string) {
	f.withheld = append(f.withheld, names)
}

func (f *fakeSource) Tools(_ context.Context, p *workspace.Project) tools.Set {
	name := "mcp__echo__say"
	return tools.Set{name: tools.External(name, "echo", "Says the text back.", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`), false,
		func(_ context.Context, args json.RawMessage, limit int) (tools.Result, error) {
			f.calls = append(f.calls, p.Name()+":"+string(args))
			return tools.Result{Content: "echo: " + string(args), Summary: "said"}, nil
		})}
}

// toolPerms allows commands, and other programs' tools by name.
type toolPerms struct {
	allowAll
	tools map[string]bool
}

func (p toolPerms) AllowTool(_ context.Context, req tools.ToolRequest) (tools.Permission, error) {
	if p.tools[req.Tool] {
		return tools.Permission{Allowed: true}, nil
	}
	return tools.Permission{Reason: "the test denies " + req.Tool}, nil
}

// A tool source's tools reach the model next to the runtime's own; a call
// asks the permission port first; a port that cannot be asked denies it.
func TestExternalTools(t *testing.T) {
	for _, c := range []struct {
		name  string
		perms tools.Permissions
		want  string
		calls int
	}{
		{"allowed", toolPerms{allowAll: true, tools: map[string]bool{"mcp__echo__say": true}}, `echo: {"text":"hi"}`, 1},
		{"denied", toolPerms{allowAll: true}, "not allowed: the test denies mcp__echo__say", 0},
		{"cannot ask", allowAll(true), "this client cannot be asked to allow it", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &fakeSource{}
			h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("mcp__echo__say", map[string]any{"text": "hi"})}},
				{Text: "done"},
			}}, Config{ToolSource: src})
			res := h.run(context.Background(), Request{Prompt: "say hi", Permissions: c.perms})
			if res.Status != "done" {
				t.Fatalf("%+v", res)
			}
			reqs := h.srv.Requests()
			var names []string
			for _, tl := range reqs[0].Tools {
				names = append(names, tl.Function.Name)
			}
			if !strings.Contains(strings.Join(names, ","), "mcp__echo__say") || !strings.Contains(strings.Join(names, ","), "read_file") {
				t.Fatalf("tools shown: %v", names)
			}
			if tm := toolMessages(reqs[1]); len(tm) != 1 || !strings.Contains(tm[0].Content, c.want) {
				t.Fatalf("tool result: %+v", tm)
			}
			if len(src.calls) != c.calls || (c.calls == 1 && src.calls[0] != `sample:{"text":"hi"}`) {
				t.Fatalf("calls: %v", src.calls)
			}
		})
	}
}

// growingSource adds a tool once a call asked for it, as an MCP server does
// with tools/list_changed.
type growingSource struct {
	mu    sync.Mutex
	added bool
}

func (g *growingSource) Withheld(*workspace.Project, []string) {}

func (g *growingSource) Tools(context.Context, *workspace.Project) tools.Set {
	g.mu.Lock()
	defer g.mu.Unlock()
	set := tools.Set{"mcp__g__add": tools.External("mcp__g__add", "g", "Adds a tool.", json.RawMessage(`{"type":"object"}`), false,
		func(context.Context, json.RawMessage, int) (tools.Result, error) {
			g.mu.Lock()
			g.added = true
			g.mu.Unlock()
			return tools.Result{Content: "added"}, nil
		})}
	if g.added {
		set["mcp__g__fresh"] = tools.External("mcp__g__fresh", "g", "New.", json.RawMessage(`{"type":"object"}`), false,
			func(context.Context, json.RawMessage, int) (tools.Result, error) {
				return tools.Result{Content: "fresh ran"}, nil
			})
	}
	return set
}

// A tool that appears during a run (tools/list_changed) is shown to the
// model at its next step, and can be called.
func TestExternalToolsRefreshEachStep(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("mcp__g__add", map[string]any{})}},
		{ToolCalls: []scripted.ToolCall{call("mcp__g__fresh", map[string]any{})}},
		{Text: "done"},
	}}, Config{ToolSource: &growingSource{}})
	perms := toolPerms{allowAll: true, tools: map[string]bool{"mcp__g__add": true, "mcp__g__fresh": true}}
	if res := h.run(context.Background(), Request{Prompt: "grow", Permissions: perms}); res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	reqs := h.srv.Requests()
	has := func(i int, name string) bool {
		for _, tl := range reqs[i].Tools {
			if tl.Function.Name == name {
				return true
			}
		}
		return false
	}
	if has(0, "mcp__g__fresh") || !has(1, "mcp__g__fresh") {
		t.Fatal("the new tool was not shown at the next step")
	}
	if tm := toolMessages(reqs[2]); len(tm) != 2 || tm[1].Content != "fresh ran" {
		t.Fatalf("%+v", tm)
	}
}

// A source's tool that does not fit a small budget is left out of the
// model's list, and the source is told so (agent.mcp names it); with room,
// nothing is left out.
func TestExternalToolsWithheld(t *testing.T) {
	for _, c := range []struct {
		name     string
		tokens   int
		withheld bool
	}{
		{"small budget", 3000, true},
		{"room", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &fakeSource{}
			h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}}, Config{ToolSource: src, ContextTokens: c.tokens})
			h.run(context.Background(), Request{Prompt: "hi"})
			if len(src.withheld) == 0 {
				t.Fatal("the source was not told what was withheld")
			}
			last := src.withheld[len(src.withheld)-1]
			offered := false
			for _, tl := range h.srv.Requests()[0].Tools {
				offered = offered || tl.Function.Name == "mcp__echo__say"
			}
			if got := slices.Contains(last, "mcp__echo__say"); got != c.withheld || offered == c.withheld {
				t.Fatalf("withheld %v, offered %v", last, offered)
			}
		})
	}
}
