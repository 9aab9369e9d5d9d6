//go:build unix

package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// offered is the names of the tools the model was offered in request i.
func offered(srv *scripted.Server, i int) []string {
	var names []string
	for _, tl := range srv.Requests()[i].Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

// In a plan run, an interactive user is never asked to approve a command:
// a line the allow rules allow runs (read-only), one they do not is refused
// in its tool result, which says why and that agent mode can run it, and
// no window/showMessageRequest is sent.
func TestPlanModeNeverAsksForACommand(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{
			withID(call("run_command", map[string]any{"command": "cat go.mod"}), "call_allowed"),
			withID(call("run_command", map[string]any{"command": "touch made-by-plan"}), "call_unruled"),
		}},
		{Text: "1. Make the file."},
	}})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	var asks atomic.Int32
	c.askResult = func(json.RawMessage) any {
		asks.Add(1)
		return map[string]string{"title": "Allow once"} // a user who would approve anything
	}
	c.initialize(map[string]string{"sample": sample}, map[string]any{"permissions": map[string]any{"allow": []string{"cat *"}}})
	if landlockABI(t, c) == 0 {
		t.Skip("no Landlock here: plan runs are offered no command tool")
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "plan a file", "mode": "plan"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if !slices.Contains(offered(srv, 0), "run_command") {
		t.Fatalf("a plan run under Landlock is not offered run_command: %v", offered(srv, 0))
	}
	if n := asks.Load(); n != 0 {
		t.Fatalf("a plan run asked the user %d time(s)", n)
	}
	results := toolResults(srv)
	if got := results["call_allowed"]; !strings.Contains(got, "module ") {
		t.Errorf("the command an allow rule allows did not run: %q", got)
	}
	got := results["call_unruled"]
	for _, want := range []string{`running "touch made-by-plan" was not allowed`, "plan-mode run", "never asks", "agent mode can run it"} {
		if !strings.Contains(got, want) {
			t.Errorf("the refused command's result lacks %q: %q", want, got)
		}
	}
	if _, err := os.Stat(filepath.Join(sample, "made-by-plan")); err == nil {
		t.Error("the refused command ran")
	}
}

// A plan run is offered the MCP tools whose server marks them readOnlyHint
// (peek) and not the others (echo); a call of the withheld one is refused
// in its tool result, and its server never sees it (nobody is asked).
func TestPlanModeOffersReadOnlyMCPTools(t *testing.T) {
	bin := mcpTestServer(t)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{
			withID(call("mcp__tools__peek", map[string]any{"text": "look"}), "call_peek"),
			withID(call("mcp__tools__echo", map[string]any{"text": "write"}), "call_echo"),
		}},
		{Text: "1. Nothing to change."},
	}})
	c := startServer(t, envFor(t, srv)...)
	a := &asked{answer: func(string) string { return "Allow once" }}
	c.askResult = a.handle
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")},
		map[string]any{"mcpServers": map[string]any{"tools": map[string]any{"command": bin}}})
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "plan with the tools", "mode": "plan"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	names := offered(srv, 0)
	if !slices.Contains(names, "mcp__tools__peek") || slices.Contains(names, "mcp__tools__echo") {
		t.Fatalf("a plan run is offered %v: want mcp__tools__peek (readOnlyHint) and not mcp__tools__echo", names)
	}
	results := toolResults(srv)
	if got := results["call_peek"]; !strings.Contains(got, "peeked: look") {
		t.Errorf("the read-only tool's result: %q", got)
	}
	if got := results["call_echo"]; !strings.Contains(got, "mcp__tools__echo is not offered in plan mode") || strings.Contains(got, "write") {
		t.Errorf("the withheld tool's result: %q", got)
	}
	if n := a.count("mcp__tools__echo"); n != 0 {
		t.Errorf("the user was asked about the withheld tool: %v", a.questions)
	}
	// In agent mode the same server's echo is offered again.
	if err := c.command("agent.run", map[string]any{"prompt": "now act", "mode": "agent", "session": res.Session}, &res); err != nil {
		t.Fatal(err)
	}
	if names := offered(srv, len(srv.Requests())-1); !slices.Contains(names, "mcp__tools__echo") {
		t.Errorf("an agent run is not offered echo: %v", names)
	}
}
