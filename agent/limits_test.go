//go:build unix

package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
)

// readTurns are n turns that each read a file (each reported as 5,000
// prompt and 100 completion tokens), then the answer.
func readTurns(n int) []scripted.Turn {
	var turns []scripted.Turn
	for range n {
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})},
			Usage: &scripted.Usage{Prompt: 5000, Completion: 100}})
	}
	return append(turns, scripted.Turn{Text: "read it all", Usage: &scripted.Usage{Prompt: 5000, Completion: 100}})
}

// A token limit stops the run before the model call that would cross it:
// the model got exactly the calls that fit, the result says which limit,
// and a resume (with a fresh budget) goes on from there.
func TestTokenLimitStopsBeforeTheCrossingCall(t *testing.T) {
	st := store.NewMemory()
	h := newHarness(t, scripted.Script{Turns: readTurns(3)}, Config{Store: st})
	// Two calls spend 10,200 tokens; the third request alone is more than 1,000.
	res := h.run(context.Background(), Request{Prompt: "read greet.go a few times", Limits: Limits{MaxTokens: 2*5100 + 1000}})
	if res.Status != store.StatusLimit || res.Limit != LimitTokens {
		t.Fatalf("result %+v, want status limit (tokens)", res)
	}
	if n := len(h.srv.Requests()); n != 2 {
		t.Fatalf("the model got %d requests, want 2 (the third would cross the limit)", n)
	}
	var last *event.Budget
	var end event.RunEnd
	for _, e := range h.events {
		switch d := e.Data.(type) {
		case event.Usage:
			last = d.Budget
		case event.RunEnd:
			end = d
		}
	}
	if last == nil || last.MaxTokens != 2*5100+1000 || last.Tokens != 2*5100 {
		t.Fatalf("the last usage event's budget is %+v, want 10200 of 11200 tokens spent", last)
	}
	if end.Status != store.StatusLimit || end.Limit != LimitTokens {
		t.Fatalf("run.end %+v", end)
	}
	if sess, _ := st.Session(context.Background(), res.Session); sess.Status != store.StatusLimit {
		t.Fatalf("stored session status %s, want limit", sess.Status)
	}
	// A resume gets its own budget: enough for the rest.
	res, err := h.reg.Resume(context.Background(), h.rt, Request{Session: res.Session, Editor: h.editor, Permissions: allowAll(false), Limits: Limits{MaxTokens: 100000}})
	if err != nil || res.Status != store.StatusDone || res.Reply != "read it all" {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if n := len(h.srv.Requests()); n != 4 {
		t.Fatalf("the model got %d requests in all, want 4", n)
	}
}

// A cost limit counts each call at the model's price and stops before the
// call whose request alone would cross it.
func TestCostLimitStopsBeforeTheCrossingCall(t *testing.T) {
	price := model.Price{Input: 10, Output: 10} // USD per million: 5,100 tokens cost $0.051
	h := newHarness(t, scripted.Script{Turns: readTurns(3)}, Config{Prices: map[string]model.Price{"scripted": price}, ModelName: "scripted"})
	res := h.run(context.Background(), Request{Prompt: "read greet.go a few times", Limits: Limits{MaxCost: 0.051*2 + 0.01}})
	if res.Status != store.StatusLimit || res.Limit != LimitCost {
		t.Fatalf("result %+v, want status limit (cost)", res)
	}
	if n := len(h.srv.Requests()); n != 2 {
		t.Fatalf("the model got %d requests, want 2", n)
	}
	if res.Usage.Cost < 0.1 || res.Usage.Cost > 0.113 {
		t.Fatalf("cost %.4f, want 0.102", res.Usage.Cost)
	}
}

// A cost limit on a model without a price is refused before any call.
func TestCostLimitNeedsAPrice(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: readTurns(1)}, Config{ModelName: "scripted"})
	_, err := h.reg.Run(context.Background(), h.rt, Request{Prompt: "hi", Editor: h.editor, Permissions: allowAll(false), Limits: Limits{MaxCost: 1}})
	if !errors.Is(err, ErrNoPrice) {
		t.Fatalf("err %v, want ErrNoPrice", err)
	}
	if n := len(h.srv.Requests()); n != 0 {
		t.Fatalf("the model got %d requests", n)
	}
}

// Subagents spend from the run's budget: a subagent's call that would cross
// it stops the subagent and the run, and the resume finishes both.
func TestSubagentsSpendTheRunsBudget(t *testing.T) {
	st := store.NewMemory()
	u := &scripted.Usage{Prompt: 5000, Completion: 100}
	h := newHarness(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "child task", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}, Usage: u},
			{Text: "child result", Usage: u}}},
		{Match: "delegate", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("call_subagent", map[string]any{"task": "child task"})}, Usage: u},
			{Text: "all done", Usage: u}}},
	}}, Config{Store: st})
	// The parent's call and the child's first fit; the child's second does not.
	res := h.run(context.Background(), Request{Prompt: "delegate it", Limits: Limits{MaxTokens: 2*5100 + 1000}})
	if res.Status != store.StatusLimit || res.Limit != LimitTokens {
		t.Fatalf("result %+v, want status limit (tokens)", res)
	}
	if n := len(h.srv.Requests()); n != 2 {
		t.Fatalf("the model got %d requests, want 2 (parent, child)", n)
	}
	res, err := h.reg.Resume(context.Background(), h.rt, Request{Session: res.Session, Editor: h.editor, Permissions: allowAll(false)})
	if err != nil || res.Status != store.StatusDone || res.Reply != "all done" {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if n := len(h.srv.Requests()); n != 4 {
		t.Fatalf("the model got %d requests in all, want 4 (the child resumed, not restarted)", n)
	}
}
