//go:build unix

package server_test

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// kill ends the server as a crash would: SIGKILL, nothing flushed. It
// returns once the client read everything the server wrote before it died:
// Wait closes the pipe, and what the reader had not read yet was lost.
func (c *lspClient) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-c.conn.Done(): // the reader reached the end of the output
	case <-time.After(time.Minute):
		c.t.Error("the client did not reach the end of the killed server's output")
	}
	c.cmd.Wait()
	c.conn.Close()
}

// firstEvent waits for an event of typ and returns it.
func (c *lspClient) firstEvent(typ string, match func(map[string]any) bool) map[string]any {
	c.t.Helper()
	var found map[string]any
	c.waitFor(typ, func() bool {
		for _, e := range c.events() {
			if e["type"] == typ && (match == nil || match(e)) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

type sessionWithSubagents struct {
	sessionView
	Subagents []struct {
		ContextID string `json:"contextId"`
		Task      string `json:"task"`
		Status    string `json:"status"`
	} `json:"subagents"`
}

func contents(v sessionView) []string {
	var out []string
	for _, m := range v.Messages {
		out = append(out, m.Role+":"+m.Content)
	}
	return out
}

// A prompt given to a running session is queued at once; the server is
// killed while it waits; after a restart, resuming the session answers the
// prompt exactly once.
func TestQueuedPromptSurvivesAKill(t *testing.T) {
	srv := model(t, scripted.Script{ByHistory: true, Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{withID(call("run_command", map[string]any{"command": "sleep 3"}), "call_sleep")}},
		{Text: "Slept, and said hi."},
	}})
	env := envFor(t, srv, "AGENT_LSP_DURABILITY=batched")
	sample := copyFixture(t, "sample")
	opts := map[string]any{"permissions": map[string]any{"allow": []string{"sleep *"}}}
	c := startServer(t, env...)
	c.initialize(map[string]string{"sample": sample}, opts)
	go c.command("agent.run", map[string]any{"prompt": "Sleep, then answer"}, nil)
	session := c.firstEvent("tool.start", nil)["session"].(string)
	var queued struct {
		Status   string `json:"status"`
		Position int    `json:"position"`
	}
	if err := c.command("agent.run", map[string]any{"session": session, "prompt": "Also say hi"}, &queued); err != nil || queued.Status != "queued" || queued.Position != 1 {
		t.Fatalf("%+v %v", queued, err)
	}
	c.kill()

	c2 := startServer(t, env...)
	c2.initialize(map[string]string{"sample": sample}, opts)
	var res runResult
	if err := c2.command("agent.resume", map[string]any{"session": session}, &res); err != nil || res.Status != "done" || res.Reply != "Slept, and said hi." {
		t.Fatalf("%+v %v", res, err)
	}
	var v sessionView
	c2.command("agent.session", map[string]any{"session": session}, &v)
	got := strings.Join(contents(v), " | ")
	if strings.Count(got, "human:Also say hi") != 1 || !strings.HasSuffix(got, "human:Also say hi | ai:Slept, and said hi.") {
		t.Fatalf("transcript: %s", got)
	}
	last := srv.Requests()[len(srv.Requests())-1]
	n := 0
	for _, m := range last.Messages {
		if m.Content == "Also say hi" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the model saw the queued prompt %d times", n)
	}
}

// The server is killed while a subagent works; resuming the parent resumes
// the same subagent context where it stopped: one subagent in the parent's
// transcript, one task and one tool round in the child's.
func TestSubagentResumesAfterAKill(t *testing.T) {
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "Delegate", ByHistory: true, Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{withID(call("call_subagent", map[string]any{"task": "List the Go files"}), "call_sub")}},
			{Text: "The child listed them."},
		}},
		{Match: "List the Go files", ByHistory: true, Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{withID(call("list_files", map[string]any{}), "call_list")}},
			{Delay: scripted.Duration(3 * time.Second), Text: "greet.go, greet_test.go"},
		}},
	}})
	env := envFor(t, srv, "AGENT_LSP_DURABILITY=sync")
	sample := copyFixture(t, "sample")
	c := startServer(t, env...)
	c.initialize(map[string]string{"sample": sample}, nil)
	go c.command("agent.run", map[string]any{"prompt": "Delegate the listing"}, nil)
	end := c.firstEvent("tool.end", func(e map[string]any) bool { return e["name"] == "list_files" })
	session := end["session"].(string)
	c.kill() // in the child's second model call (or just before its tool round was stored: either way it resumes)

	c2 := startServer(t, env...)
	c2.initialize(map[string]string{"sample": sample}, nil)
	var res runResult
	if err := c2.command("agent.resume", map[string]any{"session": session}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	var parent sessionWithSubagents
	c2.command("agent.session", map[string]any{"session": session}, &parent)
	if len(parent.Subagents) != 1 || !regexp.MustCompile(`^subagent-[0-9a-f]{8}$`).MatchString(parent.Subagents[0].ContextID) || parent.Subagents[0].Status != "done" {
		t.Fatalf("subagents %+v", parent.Subagents)
	}
	results := 0
	for _, m := range parent.Messages {
		if m.ToolCallID == "call_sub" {
			results++
		}
	}
	var child sessionWithSubagents
	if err := c2.command("agent.session", map[string]any{"session": session, "context": parent.Subagents[0].ContextID}, &child); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(contents(child.sessionView), " | ")
	if results != 1 || strings.Count(got, "human:List the Go files") != 1 || strings.Count(got, "tool:") != 1 || !strings.HasSuffix(got, "ai:greet.go, greet_test.go") {
		t.Fatalf("%d results in the parent; child transcript: %s", results, got)
	}
	lists := 0
	for _, req := range srv.Requests() {
		if len(req.Messages) > 1 && req.Messages[1].Content == "List the Go files" && len(req.Messages) == 2 {
			lists++
		}
	}
	if lists != 1 {
		t.Fatalf("the subagent started %d times", lists)
	}
}

// agent.switchProject goes through the session's state: after a cancelled
// run is switched and resumed, the model works in the new project and is
// told so, and the session index agrees.
func TestSwitchProjectThenResume(t *testing.T) {
	srv := model(t, scripted.Script{ByHistory: true, Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{withID(call("run_command", map[string]any{"command": "sleep 600"}), "call_sleep")}},
		{Text: "Now in the other project."},
	}})
	sample, other := copyFixture(t, "sample"), copyFixture(t, "other")
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": sample, "other": other}, map[string]any{"permissions": map[string]any{"allow": []string{"sleep *"}}})
	done := make(chan runResult, 1)
	go func() {
		var r runResult
		c.command("agent.run", map[string]any{"prompt": "Sleep in sample", "project": "sample"}, &r)
		done <- r
	}()
	session := c.firstEvent("tool.start", nil)["session"].(string)
	if err := c.command("agent.switchProject", map[string]any{"session": session, "project": "other"}, nil); err == nil || !strings.Contains(err.Error(), "running") {
		t.Fatalf("switching a running session: %v", err)
	}
	c.command("agent.cancel", map[string]any{"session": session}, nil)
	if r := <-done; r.Status != "cancelled" {
		t.Fatalf("%+v", r)
	}
	if err := c.command("agent.switchProject", map[string]any{"session": session, "project": "other"}, nil); err != nil {
		t.Fatal(err)
	}
	var res runResult
	if err := c.command("agent.resume", map[string]any{"session": session}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	last := srv.Requests()[len(srv.Requests())-1]
	if !strings.Contains(last.Messages[0].Content, "Current project: other") {
		t.Fatalf("the model's next request is not in the new project: %.200s", last.Messages[0].Content)
	}
	told := false
	for _, m := range last.Messages {
		told = told || strings.Contains(m.Content, "switched this session to the project other")
	}
	var list []struct {
		Session string `json:"session"`
		Project string `json:"project"`
	}
	c.command("agent.sessions", map[string]any{}, &list)
	if !told || len(list) != 1 || list[0].Project != "other" {
		t.Fatalf("told %v, sessions %+v", told, list)
	}
	var start map[string]any
	for _, e := range c.events() {
		if e["type"] == "run.start" {
			start = e
		}
	}
	if start["project"] != "other" {
		t.Fatalf("the resumed run started in %v", start["project"])
	}
}
