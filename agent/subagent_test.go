//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

func TestSubagentsIsolatedAndParallel(t *testing.T) {
	h := newHarness(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "child task A", Turns: []scripted.Turn{
			{Delay: scripted.Duration(300 * time.Millisecond), ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}},
			{Text: "A result"}}},
		{Match: "child task B", Turns: []scripted.Turn{{Delay: scripted.Duration(300 * time.Millisecond), Text: "B result"}}},
		{Match: "delegate", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("call_subagent", map[string]any{"task": "child task A"}), call("call_subagent", map[string]any{"task": "child task B", "max_loops": 3})}},
			{Text: "both done"}}},
	}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "delegate two things"})
	if res.Status != "done" || res.Reply != "both done" {
		t.Fatalf("%+v", res)
	}
	var parentSecond = h.srv.Requests()[len(h.srv.Requests())-1]
	tm := toolMessages(parentSecond)
	if len(tm) != 2 {
		t.Fatalf("parent got %d tool messages", len(tm))
	}
	var a, b tools.SubagentResult
	json.Unmarshal([]byte(tm[0].Content), &a)
	json.Unmarshal([]byte(tm[1].Content), &b)
	if !a.OK || a.Result != "A result" || a.Loops != 2 || !strings.HasPrefix(a.ContextID, "subagent-") || len(a.ContextID) != len("subagent-")+8 {
		t.Fatalf("child A result: %+v", a)
	}
	if !b.OK || b.Result != "B result" || b.Loops != 1 || b.ContextID == a.ContextID {
		t.Fatalf("child B result: %+v", b)
	}
	for _, m := range parentSecond.Messages {
		if strings.Contains(m.Content, "func Greet") || strings.Contains(m.Content, "child task A") && m.Role != "assistant" && m.Role != "tool" {
			t.Fatalf("child transcript leaked into the parent: %q", m.Content)
		}
	}
	// Each child's transcript is stored under its own namespace of the session.
	child := storedMessages(t, h.store, res.Session, a.ContextID)
	if len(child) != 4 || child[0].Content != "child task A" || child[3].Content != "A result" {
		t.Fatalf("child A transcript: %+v", child)
	}
	if parent := storedMessages(t, h.store, res.Session, ""); len(parent) != 5 {
		t.Fatalf("parent transcript has %d messages, want 5", len(parent))
	}
	// Both children started before either ended: they ran in parallel.
	started, ended := 0, 0
	for _, e := range h.events {
		switch e.Type() {
		case "subagent.start":
			if ended > 0 {
				t.Fatal("a subagent started after another ended: not parallel")
			}
			started++
		case "subagent.end":
			ended++
		}
	}
	if started != 2 || ended != 2 {
		t.Fatalf("%d starts, %d ends", started, ended)
	}
}

func TestCancelParentEndsChildren(t *testing.T) {
	// The children would answer only after ten minutes: a run that ends sooner
	// was cancelled, whatever the machine's load.
	slow := scripted.Turn{Delay: scripted.Duration(10 * time.Minute), Text: "too late"}
	h := newHarness(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "slow child", Turns: []scripted.Turn{slow, slow}},
		{Match: "parent", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("call_subagent", map[string]any{"task": "slow child 1"}), call("call_subagent", map[string]any{"task": "slow child 2"})}},
			{Text: "resumed fine"}}},
	}}, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(h.srv.Requests()) < 3 { // the parent's request and both children's
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	res := h.run(ctx, Request{Prompt: "parent task"})
	if res.Status != "cancelled" {
		t.Fatalf("%+v", res)
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("the run ended only after %s: cancelling the parent did not stop its subagents", d)
	}
	// No orphan tool call is stored: both calls got a cancellation answer.
	msgs := storedMessages(t, h.store, res.Session, "")
	if len(msgs) != 4 || msgs[2].Role != message.Tool || !strings.Contains(msgs[3].Content, "cancelled") {
		t.Fatalf("stored after cancel: %+v", msgs)
	}
	// The session stays usable: resume continues from the agent.
	res2, err := h.reg.Resume(context.Background(), h.rt, Request{Session: res.Session, Editor: h.editor})
	if err != nil || res2.Status != "done" || res2.Reply != "resumed fine" {
		t.Fatalf("resume: %+v %v", res2, err)
	}
}

// A subagent never takes more steps than its parent has left.
func TestSubagentLoopsClampedToParentSteps(t *testing.T) {
	var childTurns []scripted.Turn
	for i := 0; i < 60; i++ {
		childTurns = append(childTurns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{})}})
	}
	h := newHarness(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "child", Turns: childTurns},
		{Match: "parent", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("call_subagent", map[string]any{"task": "child work", "max_loops": 50})}},
			{Text: "parent done"}}},
	}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "parent task", MaxSteps: 6})
	childRequests := 0
	for _, r := range h.srv.Requests() {
		for _, m := range r.Messages {
			if m.Role == "user" && m.Content == "child work" {
				childRequests++
			}
		}
	}
	// The parent's tool step is its second of six: four are left for the child.
	if childRequests > 2 {
		t.Fatalf("the subagent made %d model calls under a parent with 6 steps (result %+v)", childRequests, res)
	}
}
