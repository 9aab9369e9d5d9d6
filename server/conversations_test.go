//go:build unix

package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// usageEvent is the usage event's fields a test reads.
type usageEvent struct {
	Model         string  `json:"model"`
	Prompt        int     `json:"prompt"`
	Completion    int     `json:"completion"`
	Total         int     `json:"total"`
	ContextTokens int     `json:"contextTokens"`
	Cost          float64 `json:"cost"`
	Run           struct {
		Prompt     int     `json:"prompt"`
		Completion int     `json:"completion"`
		Cost       float64 `json:"cost"`
	} `json:"run"`
}

// After each model call the client hears its usage and the run's so far,
// priced by the price table; the result keeps the total.
func TestUsageEventsAndCost(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}, Usage: &scripted.Usage{Prompt: 1000, Completion: 50}},
		{Text: "read", Usage: &scripted.Usage{Prompt: 1200, Completion: 30}},
	}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")},
		map[string]any{"model": map[string]any{"prices": map[string]any{"scripted": map[string]float64{"input": 2, "output": 8}}}})
	var res struct {
		runResult
		Usage struct {
			PromptTokens int     `json:"promptTokens"`
			Cost         float64 `json:"cost"`
		} `json:"usage"`
	}
	if err := c.command("agent.run", map[string]any{"prompt": "read greet.go"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	var usages []usageEvent
	for _, e := range c.notifications("agent/event") {
		if strings.Contains(string(e), `"type":"usage"`) {
			var u usageEvent
			json.Unmarshal(e, &u)
			usages = append(usages, u)
		}
	}
	if len(usages) != 2 {
		t.Fatalf("%d usage events, want one per model call", len(usages))
	}
	first, last := usages[0], usages[1]
	if first.Prompt != 1000 || first.Completion != 50 || first.Model != "scripted" || first.ContextTokens == 0 || !near(first.Cost, (1000*2+50*8)/1e6) {
		t.Fatalf("first call: %+v", first)
	}
	if last.Run.Prompt != 2200 || last.Run.Completion != 80 || !near(last.Run.Cost, (2200*2+80*8)/1e6) {
		t.Fatalf("run so far: %+v", last.Run)
	}
	if res.Usage.PromptTokens != 2200 || !near(res.Usage.Cost, last.Run.Cost) {
		t.Fatalf("result usage: %+v", res.Usage)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// agent.models lists the endpoint's models; a run names its model, which the
// session records and keeps; a model the endpoint does not offer is refused
// naming the offered ones; an endpoint without a list says so.
func TestModelsAndTheRunsModel(t *testing.T) {
	srv := model(t, scripted.Script{Models: []string{"big", "small"}, Turns: []scripted.Turn{{Text: "one"}, {Text: "two"}, {Text: "three"}}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	var list struct {
		Current string `json:"current"`
		Models  []struct {
			ID string `json:"id"`
		} `json:"models"`
	}
	if err := c.command("agent.models", map[string]any{}, &list); err != nil || list.Current != "scripted" || len(list.Models) != 2 || list.Models[0].ID != "big" {
		t.Fatalf("models: %+v %v", list, err)
	}
	err := c.command("agent.run", map[string]any{"prompt": "hi", "model": "huge"}, nil)
	if err == nil || !strings.Contains(err.Error(), `does not offer the model "huge"; it offers: big, small`) {
		t.Fatalf("a model not offered: %v", err)
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "hi", "model": "small"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if err := c.command("agent.run", map[string]any{"prompt": "again", "session": res.Session}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	reqs := srv.Requests()
	if reqs[0].Model != "small" || reqs[1].Model != "small" {
		t.Fatalf("models sent: %q, %q: the session keeps the model it ran with", reqs[0].Model, reqs[1].Model)
	}
	var sessions []map[string]any
	if err := c.command("agent.sessions", map[string]any{}, &sessions); err != nil || len(sessions) != 1 || sessions[0]["model"] != "small" {
		t.Fatalf("agent.sessions does not show the session's model: %v", sessions[0])
	}

	srv.SetScript(scripted.Script{ModelsStatus: 404})
	err = c.command("agent.models", map[string]any{}, nil)
	if err == nil || !strings.Contains(err.Error(), "no model list") || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("an endpoint without a list: %v", err)
	}
	var projects []any
	if err := c.command("agent.projects", map[string]any{}, &projects); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}
}

// Context references: attached documents are read as the editor has them
// (unsaved text), whole or a range, and added to the prompt; a file outside
// every project is refused.
func TestContextReferences(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "seen"}}})
	c := startServer(t, envFor(t, srv)...)
	sample := copyFixture(t, "sample")
	c.initialize(map[string]string{"sample": sample}, nil)
	greet := filepath.Join(sample, "greet.go")
	c.conn.Notify(t.Context(), "textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": uri.File(greet), "languageId": "go", "version": 1, "text": "package sample\n\n// UNSAVED comment\nfunc Greet() {}\n"}})
	err := c.command("agent.run", map[string]any{"prompt": "explain", "context": []map[string]any{{"uri": uri.File("/etc/hostname")}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "outside every project") {
		t.Fatalf("a file outside the projects: %v", err)
	}
	var res runResult
	err = c.command("agent.run", map[string]any{"prompt": "explain", "context": []map[string]any{
		{"uri": uri.File(greet)},
		{"uri": uri.File(filepath.Join(sample, "greet_test.go")), "range": map[string]any{"start": map[string]int{"line": 0, "character": 0}, "end": map[string]int{"line": 1, "character": 0}}},
	}}, &res)
	if err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	msgs := srv.Requests()[0].Messages
	prompt := msgs[len(msgs)-1].Content
	for _, want := range []string{"explain", "(The user attached greet.go (5 lines):)", "// UNSAVED comment", "(The user attached greet_test.go lines 1-1:)"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// Settings changed in the editor apply to the next run, without a restart;
// a run in progress keeps its settings and is not killed; settings that do
// not resolve are refused with a message and the old ones kept.
func TestSettingsChangeLive(t *testing.T) {
	srv := model(t, scripted.Script{Models: []string{"scripted", "other"}, Turns: []scripted.Turn{
		{Delay: scripted.Duration(2 * time.Second), Text: "slow first"}, {Text: "second"},
	}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	first := make(chan runResult, 1)
	go func() {
		var r runResult
		c.command("agent.run", map[string]any{"prompt": "slowly"}, &r)
		first <- r
	}()
	c.waitFor("the first run to start", func() bool {
		for _, e := range c.events() {
			if e["type"] == "run.start" {
				return true
			}
		}
		return false
	})
	c.conn.Notify(t.Context(), "workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"agentLsp": map[string]any{"model": map[string]any{"model": "other"}}}})
	c.conn.Notify(t.Context(), "workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"window": 5}})
	if r := <-first; r.Status != "done" || r.Reply != "slow first" {
		t.Fatalf("the run in progress: %+v", r)
	}
	var r runResult
	if err := c.command("agent.run", map[string]any{"prompt": "next"}, &r); err != nil || r.Status != "done" {
		t.Fatalf("%+v %v", r, err)
	}
	reqs := srv.Requests()
	if reqs[0].Model != "scripted" || reqs[1].Model != "other" {
		t.Fatalf("models: %q then %q", reqs[0].Model, reqs[1].Model)
	}
	c.waitFor("the bad settings to be refused", func() bool {
		for _, n := range c.notifications("window/showMessage") {
			if strings.Contains(string(n), "settings not applied") && strings.Contains(string(n), "window") {
				return true
			}
		}
		return false
	})
}

// A failed run says in a sentence what failed and what to do (a missing
// key: TestNoKeyNoRequest).
func TestErrorsPeopleSee(t *testing.T) {
	down := model(t, scripted.Script{})
	url := down.URL
	down.Close()
	c := startServer(t, "OPENAI_BASE_URL="+url, "OPENAI_API_KEY=sk-x", "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE="+filepath.Join(t.TempDir(), "s.db"))
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	var out struct {
		runResult
		Error string `json:"error"`
	}
	if err := c.command("agent.run", map[string]any{"prompt": "hi"}, &out); err != nil || out.Status != "failed" {
		t.Fatalf("%+v %v", out, err)
	}
	want := fmt.Sprintf("cannot reach %s (connection refused)", url)
	if !strings.HasPrefix(out.Error, want) || strings.Contains(out.Error, "\n") || len(out.Error) > 300 {
		t.Fatalf("error %q, want it to start %q", out.Error, want)
	}
}
