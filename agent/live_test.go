//go:build unix

package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Two runtimes over one registry (two windows of a daemon): a session that
// runs in one is busy in the other, and a prompt sent from the other
// (whose window names the session's folder otherwise) is sent to the live
// session, which queues it in the graph that runs it; that run reads it.
func TestPromptFromAnotherWindowGoesToTheLiveSession(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 2"})}},
		{Text: "noted"}}}, Config{})
	reg := h.reg // the process's, which both windows share
	ws := workspace.New(workspace.UTF16)
	if _, err := ws.Add("mine", h.roots["sample"]); err != nil {
		t.Fatal(err)
	}
	other, err := New(Config{Workspace: ws, Store: h.store, Model: h.rt.cfg.Model})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Result, 1)
	go func() {
		done <- h.run(context.Background(), Request{Prompt: "start", Project: "sample", Permissions: allowAll(true)})
	}()
	waitFor(t, "the slow tool", func() bool { return len(h.eventsOf("tool.start")) > 0 })
	session := h.eventsOf("tool.start")[0].Session
	if !reg.Running(session) || reg.Count() != 1 {
		t.Fatalf("the other window does not see the session running (running %v, count %d)", reg.Running(session), reg.Count())
	}
	res, err := reg.Run(context.Background(), other, Request{Session: session, Project: "mine", Prompt: "from the other window"})
	if err != nil || res.Status != StatusQueued || res.Position != 1 {
		t.Fatalf("queue from the other window: %+v %v", res, err)
	}
	if res := <-done; res.Status != "done" || res.Reply != "noted" {
		t.Fatalf("%+v", res)
	}
	var seen []string
	for _, m := range h.srv.Requests()[1].Messages {
		if m.Role == openai.ChatMessageRoleUser {
			seen = append(seen, firstWord(m.Content))
		}
	}
	if strings.Join(seen, " ") != "start from" {
		t.Fatalf("the run's second model call saw the prompts %v", seen)
	}
	if q := h.eventsOf("message.queued"); len(q) != 1 {
		t.Fatalf("%d message.queued events in the running window", len(q))
	}
	if reg.Running(session) || reg.Count() != 0 {
		t.Fatal("the session is still live after its run ended")
	}
}
