//go:build unix

package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// A provider's count moves the scale only when it is credible (at least the
// request's bytes over 8) and a second credible count agrees with it (their
// ratios to the estimate within 25%); missing, tiny or erratic counts leave
// it where it was.
func TestObserveBelievesOnlyCredibleAgreeingReports(t *testing.T) {
	const size = 40_000 // bytes: a report below 5,000 is not credible
	for _, c := range []struct {
		name    string
		reports []int // each of a request estimated at 10,000 tokens
		moved   bool
		lower   bool // the scale went down
	}{
		{"none", []int{0, 0, 0}, false, false},
		{"fixed and small", []int{10, 10, 10, 10}, false, false},
		{"cached-only, below the floor", []int{4000, 4100, 3900}, false, false},
		{"one credible report", []int{6000}, false, false},
		{"two that disagree", []int{6000, 9000}, false, false},
		{"erratic", []int{6000, 12000, 6000, 12000}, false, false},
		{"two that agree, lower", []int{6000, 6500}, true, true},
		{"two that agree, higher", []int{14000, 15000}, true, false},
		{"agreeing around a tiny one", []int{6000, 10, 6200}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBudget(100_000)
			for _, r := range c.reports {
				b.observe(10_000, r, size)
			}
			switch {
			case !c.moved && b.scale != 1:
				t.Fatalf("the scale moved to %.3f", b.scale)
			case c.moved && c.lower && b.scale >= 1, c.moved && !c.lower && b.scale <= 1:
				t.Fatalf("the scale is %.3f", b.scale)
			}
		})
	}
}

// A provider (or proxy) that reports a fixed, tiny prompt_tokens for every
// request: the budget ignores it, and every request of a long run in a
// 6,000-token context fits it as a real tokenizer (cl100k_base, the
// scripted model's) counts it. It used to scale the estimates down to half
// and send requests of about 8,500 tokens.
func TestFixedSmallUsageReportsKeepRequestsWithinTheBudget(t *testing.T) {
	const task = "Read big.txt 60 times and tell me what it holds."
	lie := &scripted.Usage{Prompt: 10, Completion: 5}
	main := scripted.Conversation{Match: "Read big.txt"}
	for i := 0; i < 60; i++ {
		main.Turns = append(main.Turns, scripted.Turn{Usage: lie, ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "big.txt"})}})
	}
	main.Turns = append(main.Turns, scripted.Turn{Usage: lie, Text: "It holds Go handlers."})
	summaries := summaryConversation(200)
	for i := range summaries.Turns {
		summaries.Turns[i].Usage = lie
	}
	h := newHarness(t, scripted.Script{ContextTokens: 6000, Conversations: []scripted.Conversation{summaries, main}},
		Config{ContextTokens: 6000, MaxSteps: 200})
	os.WriteFile(filepath.Join(h.roots["sample"], "big.txt"), []byte(sourceText(5000)), 0o644)
	res := h.run(context.Background(), Request{Prompt: task})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	counts := h.srv.Counts()
	for i, n := range counts {
		if n > 6000 {
			t.Errorf("request %d: %d tokens (cl100k) in a 6,000-token context", i, n)
		}
	}
	if n := h.srv.Overflows(); n != 0 {
		t.Errorf("%d requests were refused as over the context", n)
	}
	t.Logf("%d requests, largest %d tokens", len(counts), maxOf(counts))
}
