//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// sourceText is about n bytes of Go-like source, the kind of text tools return.
func sourceText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "func handler%d(w http.ResponseWriter, r *http.Request) error {\n\tif err := validate(r, %d); err != nil {\n\t\treturn fmt.Errorf(\"request %%d: %%w\", %d, err)\n\t}\n\treturn nil\n}\n\n", i, i*7, i)
	}
	return b.String()[:n]
}

// summaryConversation answers every summary call with a short summary.
func summaryConversation(n int) scripted.Conversation {
	c := scripted.Conversation{Match: "Summarize the conversation"}
	for i := 0; i < n; i++ {
		c.Turns = append(c.Turns, scripted.Turn{Text: fmt.Sprintf("Summary %d: the user asked to read big.txt many times; it was read repeatedly and holds Go handlers.", i)})
	}
	return c
}

// isSummaryCall tells the summary calls from the agent's turns.
func isSummaryCall(req openai.ChatCompletionRequest) bool {
	return len(req.Messages) > 1 && strings.HasPrefix(req.Messages[1].Content, "Summarize the conversation")
}

func (h *harness) eventsOf(typ event.Type) []event.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []event.Event
	for _, e := range h.events {
		if e.Type() == typ {
			out = append(out, e)
		}
	}
	return out
}

// A run of 150 tool calls with 5 KB outputs in a 6,000-token context: every
// request holds the task, fits the context as the provider counts it (the
// scripted model refuses anything larger with OpenAI's real answer), is
// structurally valid; older turns are compacted; the run ends done.
func TestLongRunKeepsItsTaskWithinTheBudget(t *testing.T) {
	const task = "Read big.txt 150 times and tell me what it holds."
	main := scripted.Conversation{Match: "Read big.txt"}
	for i := 0; i < 150; i++ {
		main.Turns = append(main.Turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "big.txt"})}})
	}
	main.Turns = append(main.Turns, scripted.Turn{Text: "It holds Go handlers."})
	h := newHarness(t, scripted.Script{ContextTokens: 6000, Conversations: []scripted.Conversation{summaryConversation(300), main}},
		Config{ContextTokens: 6000, MaxSteps: 400})
	os.WriteFile(filepath.Join(h.roots["sample"], "big.txt"), []byte(sourceText(5000)), 0o644)
	res := h.run(context.Background(), Request{Prompt: task})
	if res.Status != "done" || res.Reply != "It holds Go handlers." {
		t.Fatalf("%+v", res)
	}
	reqs, counts := h.srv.Requests(), h.srv.Counts()
	if n := h.srv.Overflows(); n != 0 {
		t.Errorf("%d requests were over the 6,000-token context", n)
	}
	turns := 0
	for i, req := range reqs {
		if counts[i] > 6000 {
			t.Errorf("request %d: %d tokens", i, counts[i])
		}
		if isSummaryCall(req) {
			continue
		}
		turns++
		if req.Messages[1].Role != openai.ChatMessageRoleUser || req.Messages[1].Content != task {
			t.Fatalf("request %d does not start with the task: %q", i, req.Messages[1].Content)
		}
		checkNoOrphans(t, req.Messages)
	}
	if turns != 151 {
		t.Errorf("%d model turns, want 151", turns)
	}
	compactions := h.eventsOf("context.compacted")
	if len(compactions) == 0 {
		t.Fatal("no compaction in a run 20 times the context")
	}
	for _, e := range compactions {
		c := e.Data.(event.ContextCompacted)
		if !c.Summarized || c.After >= c.Before {
			t.Fatalf("compaction %+v", c)
		}
	}
	t.Logf("%d turns, %d summary calls, %d compactions; largest request %d tokens", turns, len(reqs)-turns, len(compactions), maxOf(counts))
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// overflowCases are the real context-overflow answers of providers.
func overflowCases(t *testing.T) []struct {
	Name     string
	Status   int
	Body     string
	Overflow bool
	Learns   bool
} {
	var f struct {
		Cases []struct {
			Name     string
			Status   int
			Body     string
			Overflow bool
			Learns   bool
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "testdata", "model", "context-overflow.json"))
	if err != nil || json.Unmarshal(b, &f) != nil {
		t.Fatalf("context-overflow.json: %v", err)
	}
	return f.Cases
}

// A provider whose context is smaller than the runtime believes refuses a
// request in its own words: the run compacts harder, retries and ends done;
// where the answer names the context size, the runtime learns it.
func TestOverflowRecovery(t *testing.T) {
	for _, c := range overflowCases(t) {
		if !c.Overflow {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			main := scripted.Conversation{Match: "Read big.txt"}
			for i := 0; i < 40; i++ {
				main.Turns = append(main.Turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "big.txt"})}})
			}
			main.Turns = append(main.Turns, scripted.Turn{Text: "done"})
			h := newHarness(t, scripted.Script{ContextTokens: 5000, Overflow: &scripted.Overflow{Status: c.Status, Body: c.Body},
				Conversations: []scripted.Conversation{summaryConversation(50), main}}, Config{ContextTokens: 32000})
			os.WriteFile(filepath.Join(h.roots["sample"], "big.txt"), []byte(sourceText(3000)), 0o644)
			res := h.run(context.Background(), Request{Prompt: "Read big.txt forty times."})
			if res.Status != "done" {
				t.Fatalf("%+v", res)
			}
			if h.srv.Overflows() == 0 {
				t.Fatal("the provider never refused a request: the test proves nothing")
			}
			if c.Learns && h.rt.ContextTokens() != 5000 {
				t.Errorf("learned a context of %d tokens, want 5000", h.rt.ContextTokens())
			}
			if !c.Learns && h.rt.ContextTokens() >= 32000 {
				t.Errorf("the budget stayed at %d tokens after an overflow", h.rt.ContextTokens())
			}
			overflowed := false
			for _, e := range h.eventsOf("context.compacted") {
				overflowed = overflowed || e.Data.(event.ContextCompacted).Reason == "overflow"
			}
			if !overflowed {
				t.Error("no compaction after the overflow")
			}
		})
	}
}

// A provider that refuses every request as too large fails the run after a
// few retries, with an error that names the limit.
func TestOverflowThatNeverFitsFails(t *testing.T) {
	h := newHarness(t, scripted.Script{ContextTokens: 10, Turns: []scripted.Turn{{Text: "never"}}}, Config{ContextTokens: 32000})
	res := h.run(context.Background(), Request{Prompt: "hello"})
	if res.Status != "failed" || !strings.Contains(res.Error, "limit") || !strings.Contains(res.Error, "maximum context length is 10 tokens") {
		t.Fatalf("%+v", res)
	}
	if n := h.srv.Overflows(); n != maxOverflowRetries+1 {
		t.Fatalf("%d requests refused, want %d", n, maxOverflowRetries+1)
	}
}

// A summary call that always fails does not fail the run: the oldest turns
// are dropped, an event and the log say so, and the session goes on.
func TestFailedSummaryNeverFailsTheRun(t *testing.T) {
	main := scripted.Conversation{Match: "Read big.txt"}
	for i := 0; i < 30; i++ {
		main.Turns = append(main.Turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "big.txt"})}})
	}
	main.Turns = append(main.Turns, scripted.Turn{Text: "done"}, scripted.Turn{Text: "again"})
	failing := scripted.Conversation{Match: "Summarize the conversation"}
	for i := 0; i < 100; i++ {
		failing.Turns = append(failing.Turns, scripted.Turn{Error: &scripted.HTTPError{Status: 400, Message: "the summarizer is broken"}})
	}
	var logged []string
	h := newHarness(t, scripted.Script{ContextTokens: 6000, Conversations: []scripted.Conversation{failing, main}},
		Config{ContextTokens: 6000, Log: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	os.WriteFile(filepath.Join(h.roots["sample"], "big.txt"), []byte(sourceText(4000)), 0o644)
	res := h.run(context.Background(), Request{Prompt: "Read big.txt thirty times."})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	dropped := false
	for _, e := range h.eventsOf("context.compacted") {
		c := e.Data.(event.ContextCompacted)
		dropped = dropped || (!c.Summarized && strings.Contains(c.Error, "the summarizer is broken"))
	}
	if !dropped || !strings.Contains(strings.Join(logged, "\n"), "without a summary") {
		t.Fatalf("no event or log of the dropped turns: %v", logged)
	}
	if h.srv.Overflows() != 0 {
		t.Errorf("%d requests over the context", h.srv.Overflows())
	}
	next := h.run(context.Background(), Request{Session: res.Session, Prompt: "Read big.txt once more."})
	if next.Status != "done" || next.Reply != "again" {
		t.Fatalf("the next run on the session: %+v", next)
	}
}

// A prompt that alone exceeds the budget fails the run before any model call,
// naming both sizes.
func TestPromptTooLargeFailsAtStart(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "never"}}}, Config{ContextTokens: 4000})
	_, err := h.reg.Run(context.Background(), h.rt, Request{Prompt: sourceText(40000), Editor: h.editor, Permissions: allowAll(false)})
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.ContextTokens != 4000 || tl.Need <= tl.Budget || !strings.Contains(err.Error(), "contextTokens 4000") {
		t.Fatalf("%v", err)
	}
	if len(h.srv.Requests()) != 0 {
		t.Fatal("the model was called")
	}
}

// Tool definitions over their share of a small budget are withheld, least
// needed first, and the run says which.
func TestToolsWithheldInASmallBudget(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}}, Config{ContextTokens: 3000})
	h.run(context.Background(), Request{Prompt: "hi"})
	start := h.eventsOf("run.start")[0].Data.(event.RunStart)
	// The least needed last: the background process tools, after fetch_url.
	if len(start.Withheld) == 0 || start.Withheld[len(start.Withheld)-1] != "process_wait" || !slices.Contains(start.Withheld, "fetch_url") {
		t.Fatalf("withheld %v", start.Withheld)
	}
	offered := map[string]bool{}
	for _, tl := range h.srv.Requests()[0].Tools {
		offered[tl.Function.Name] = true
	}
	if !offered["read_file"] || offered[start.Withheld[0]] {
		t.Fatalf("offered %v, withheld %v", offered, start.Withheld)
	}
}

// A tool result from another project says so, and is tagged with that
// project; the system prompt carries the project's AGENTS.md.
func TestProjectTagsAndInstructions(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "index.js", "project": "other"}), call("read_file", map[string]any{"path": "greet.go"})}},
		{Text: "read both"}}}, Config{})
	os.WriteFile(filepath.Join(h.roots["sample"], "AGENTS.md"), []byte("Run go vet before you finish.\n"), 0o644)
	res := h.run(context.Background(), Request{Prompt: "read both"})
	reqs := h.srv.Requests()
	if !strings.Contains(reqs[0].Messages[0].Content, "## Project instructions (AGENTS.md, repository content)") || !strings.Contains(reqs[0].Messages[0].Content, "Run go vet before you finish.") {
		t.Fatalf("system prompt: %s", reqs[0].Messages[0].Content)
	}
	tm := toolMessages(reqs[1])
	if !strings.HasPrefix(tm[0].Content, "[project other] ") || strings.HasPrefix(tm[1].Content, "[project") {
		t.Fatalf("tool results %q / %q", tm[0].Content[:40], tm[1].Content[:40])
	}
	var names []string
	for _, m := range storedMessages(t, h.store, res.Session, "") {
		if m.Role == message.Tool {
			names = append(names, m.Name)
		}
	}
	if strings.Join(names, " ") != "tool@other tool@sample" {
		t.Fatalf("stored tags %v", names)
	}
}

// An AGENTS.md longer than the cap is cut with a note.
func TestLongInstructionsAreCut(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}}, Config{ContextTokens: 128000})
	os.WriteFile(filepath.Join(h.roots["sample"], "CLAUDE.md"), []byte(sourceText(50000)), 0o644)
	h.run(context.Background(), Request{Prompt: "hi"})
	sys := h.srv.Requests()[0].Messages[0].Content
	if !strings.Contains(sys, "(CLAUDE.md is 50000 bytes; its head and tail are shown.") || len(sys) > 20000 {
		t.Fatalf("%d bytes of system prompt", len(sys))
	}
}

// waitFor polls cond, bounded generously to catch a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Prompts given to a running session are queued, seen by the model on its
// next call in the order given, and covered by the running run's result.
func TestSteeringARunningAgent(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 2"})}},
		{Text: "noted both"}}}, Config{})
	done := make(chan Result, 1)
	go func() { done <- h.run(context.Background(), Request{Prompt: "start", Permissions: allowAll(true)}) }()
	waitFor(t, "the slow tool", func() bool { return len(h.eventsOf("tool.start")) > 0 })
	session := h.eventsOf("tool.start")[0].Session
	for i, p := range []string{"also do A", "and then B"} {
		res, err := h.reg.Run(context.Background(), h.rt, Request{Session: session, Prompt: p})
		if err != nil || res.Status != StatusQueued || res.Position != i+1 {
			t.Fatalf("queue %q: %+v %v", p, res, err)
		}
	}
	res := <-done
	if res.Status != "done" || res.Reply != "noted both" {
		t.Fatalf("%+v", res)
	}
	reqs := h.srv.Requests()
	var seen []string
	for _, m := range reqs[1].Messages {
		if m.Role == openai.ChatMessageRoleUser || m.Role == openai.ChatMessageRoleTool {
			seen = append(seen, string(m.Role)+":"+firstWord(m.Content))
		}
	}
	if strings.Join(seen, " ") != "user:start tool:exit user:also user:and" {
		t.Fatalf("the second call saw %v", seen)
	}
	if q := h.eventsOf("message.queued"); len(q) != 2 {
		t.Fatalf("%d message.queued events", len(q))
	}
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// A run cancelled with prompts queued returns them in its result.
func TestCancelReturnsQueuedPrompts(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 600"})}},
		{Text: "never"}}}, Config{})
	done := make(chan Result, 1)
	go func() { done <- h.run(context.Background(), Request{Prompt: "start", Permissions: allowAll(true)}) }()
	waitFor(t, "the slow tool", func() bool { return len(h.eventsOf("tool.start")) > 0 })
	session := h.eventsOf("tool.start")[0].Session
	if res, err := h.reg.Run(context.Background(), h.rt, Request{Session: session, Prompt: "please also do C"}); err != nil || res.Status != StatusQueued {
		t.Fatalf("%+v %v", res, err)
	}
	h.reg.Cancel(session)
	res := <-done
	if res.Status != "cancelled" || len(res.Queued) != 1 || res.Queued[0] != "please also do C" {
		t.Fatalf("%+v", res)
	}
}

// Choosing what a model call sees of a 10,000-message session: in steady
// state (a summary covers all but the newest 200 messages) and when the
// history has outgrown the budget and is compacted (the window, then the
// compaction's smaller window and the turns it folds). Either must stay far
// below a millisecond per model call.
func BenchmarkWindow(b *testing.B) {
	msgs := []message.Message{{ID: "task", Role: message.Human, Content: "the task"}}
	text := sourceText(2000)
	for i := 0; len(msgs) < 10000; i++ {
		ai := message.Message{ID: fmt.Sprintf("ai%05d", i), Role: message.AI, ToolCalls: []message.ToolCall{{ID: fmt.Sprintf("c%05d", i), Name: "read_file", Args: `{"path":"big.txt"}`}}}
		msgs = append(msgs, ai, message.Message{ID: fmt.Sprintf("t%05d", i), Role: message.Tool, ToolCallID: ai.ToolCalls[0].ID, Content: text})
	}
	lim := limits{tokens: 100000, messages: DefaultWindow, toolBytes: 16 << 10}
	for _, bc := range []struct {
		name string
		from int
	}{{"steady", len(msgs) - 200}, {"compaction", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			var c counter
			pinned := pinnedAt(msgs, "task")
			selectWindow(msgs, bc.from, pinned, lim, &c) // counts are cached from the first call on, as in a run
			b.ReportAllocs()
			for b.Loop() {
				pinned := pinnedAt(msgs, "task")
				w := selectWindow(msgs, bc.from, pinned, lim, &c)
				if w.olderEnd > bc.from {
					half := lim
					half.tokens /= 2
					kept := selectWindow(msgs, bc.from, pinned, half, &c)
					if older, _, _ := kept.older(msgs, bc.from, pinned, 4*100000, &c); len(older) == 0 {
						b.Fatal("nothing to compact")
					}
				}
				if len(w.shown) == 0 {
					b.Fatal("empty window")
				}
			}
		})
	}
}

// A subagent asked for as read-only, or under the read-only setting, is
// offered only the tools that read.
func TestReadOnlySubagents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    map[string]any
		setting bool
	}{
		{"asked by the model", map[string]any{"task": "look around", "readOnly": true}, false},
		{"by configuration", map[string]any{"task": "look around"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, scripted.Script{Conversations: []scripted.Conversation{
				{Match: "look around", Turns: []scripted.Turn{{Text: "looked"}}},
				{Match: "delegate", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("call_subagent", tc.args)}}, {Text: "done"}}},
			}}, Config{SubagentsReadOnly: tc.setting})
			h.run(context.Background(), Request{Prompt: "delegate"})
			for _, req := range h.srv.Requests() {
				if req.Messages[1].Content != "look around" {
					continue
				}
				var names []string
				for _, tl := range req.Tools {
					names = append(names, tl.Function.Name)
				}
				if strings.Join(names, " ") != "read_file search list_files" {
					t.Fatalf("the subagent was offered %v", names)
				}
				return
			}
			t.Fatal("the subagent never called the model")
		})
	}
}

// A summary call that outlasts the summary timeout is given up: the turns are
// dropped and the run goes on.
func TestSlowSummaryIsGivenUp(t *testing.T) {
	main := scripted.Conversation{Match: "Read big.txt"}
	for i := 0; i < 12; i++ {
		main.Turns = append(main.Turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "big.txt"})}})
	}
	main.Turns = append(main.Turns, scripted.Turn{Text: "done"})
	slow := scripted.Conversation{Match: "Summarize the conversation"}
	for i := 0; i < 20; i++ {
		slow.Turns = append(slow.Turns, scripted.Turn{Delay: scripted.Duration(3 * time.Second), Text: "too late"})
	}
	h := newHarness(t, scripted.Script{Conversations: []scripted.Conversation{slow, main}},
		Config{ContextTokens: 6000, SummaryTimeout: 100 * time.Millisecond})
	os.WriteFile(filepath.Join(h.roots["sample"], "big.txt"), []byte(sourceText(4000)), 0o644)
	res := h.run(context.Background(), Request{Prompt: "Read big.txt a dozen times."})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	timedOut := false
	for _, e := range h.eventsOf("context.compacted") {
		c := e.Data.(event.ContextCompacted)
		timedOut = timedOut || (!c.Summarized && strings.Contains(c.Error, "deadline"))
	}
	if !timedOut {
		t.Fatal("no compaction reported the summary's timeout")
	}
}

// systemPromptOfARun runs the agent once (the model answers at once) and
// returns the system prompt its request carried.
func systemPromptOfARun(h *harness) string {
	h.srv.SetScript(scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})
	h.run(context.Background(), Request{Prompt: "hi"})
	return h.srv.Requests()[0].Messages[0].Content
}

// The instructions follow the file: written, changed, removed, and open in
// the editor (its buffer wins), from one model turn to the next.
func TestInstructionsFollowTheFile(t *testing.T) {
	h := newHarness(t, scripted.Script{}, Config{})
	path := filepath.Join(h.roots["sample"], "AGENTS.md")
	old := time.Now().Add(-time.Hour) // as a file written long ago, which the cache trusts
	sys := func(change func()) string { t.Helper(); change(); return systemPromptOfARun(h) }
	if s := sys(func() {}); strings.Contains(s, "Project instructions") {
		t.Fatalf("instructions without a file: %s", s)
	}
	if s := sys(func() { os.WriteFile(path, []byte("Use tabs.\n"), 0o644); os.Chtimes(path, old, old) }); !strings.Contains(s, "Use tabs.") {
		t.Fatalf("new file not read: %s", s)
	}
	if s := sys(func() {
		os.WriteFile(path, []byte("Use spaces, four.\n"), 0o644)
		os.Chtimes(path, old.Add(time.Minute), old.Add(time.Minute))
	}); !strings.Contains(s, "Use spaces, four.") {
		t.Fatalf("changed file not read again: %s", s)
	}
	// Two writes of one size in one tick of the file system's clock.
	var tick time.Time
	sys(func() {
		os.WriteFile(path, []byte("Use spaces, two.\n"), 0o644)
		fi, _ := os.Stat(path)
		tick = fi.ModTime()
	})
	if s := sys(func() { os.WriteFile(path, []byte("Use spaces, 2!!.\n"), 0o644); os.Chtimes(path, tick, tick) }); !strings.Contains(s, "Use spaces, 2!!.") {
		t.Fatalf("file written twice in one tick not read again: %s", s)
	}
	if s := sys(func() { h.ws.Open(path, 1, "From the buffer.\n") }); !strings.Contains(s, "From the buffer.") {
		t.Fatalf("buffer not read: %s", s)
	}
	if s := sys(func() { h.ws.Close(path); os.Remove(path) }); strings.Contains(s, "Project instructions") {
		t.Fatalf("removed file still read: %s", s)
	}
}

// In a root whose entries have not changed for long, the absent
// instruction files are known absent from one stat of the root; a file
// created there, a buffer opened, or the target of a link that was there
// already appearing, is still read at the next turn.
func TestInstructionsAppearInAnOldRoot(t *testing.T) {
	h := newHarness(t, scripted.Script{}, Config{})
	root := h.roots["sample"]
	old := time.Now().Add(-time.Hour)
	age := func() { // a time of its own each time, as a folder's entries changing gives
		old = old.Add(time.Second)
		os.Chtimes(root, old, old)
	}
	sys := func(change func()) string { t.Helper(); change(); return systemPromptOfARun(h) }
	for range 2 { // the second time from what the first recorded
		if s := sys(age); strings.Contains(s, "Project instructions") {
			t.Fatalf("instructions without a file: %s", s)
		}
	}
	agents := filepath.Join(root, "AGENTS.md")
	if s := sys(func() { h.ws.Open(agents, 1, "From a new buffer.\n") }); !strings.Contains(s, "From a new buffer.") {
		t.Fatalf("buffer of a file not on disk not read: %s", s)
	}
	h.ws.Close(agents)
	sys(age)
	if s := sys(func() { os.WriteFile(filepath.Join(root, "CLAUDE.md"), []byte("Be brief.\n"), 0o644); age() }); !strings.Contains(s, "Be brief.") {
		t.Fatalf("file created in an old root not read: %s", s)
	}
	// A link to nothing yet is an entry: its target may appear in another
	// folder, the root unchanged, so such a root is never taken for empty.
	os.Remove(filepath.Join(root, "CLAUDE.md"))
	os.Mkdir(filepath.Join(root, "docs"), 0o755)
	os.Symlink("docs/agents.md", agents)
	sys(age)
	sys(func() {})
	if s := sys(func() { os.WriteFile(filepath.Join(root, "docs", "agents.md"), []byte("Through the link.\n"), 0o644) }); !strings.Contains(s, "Through the link.") {
		t.Fatalf("target of a link appearing not read: %s", s)
	}
}

// A root looked at within a second of its last change is not recorded as
// without instruction files: an AGENTS.md added in the same tick of the
// file system's clock (here: the root's time set back to that tick) is read
// once that tick is old.
func TestInstructionsAddedInTheSameTick(t *testing.T) {
	h := newHarness(t, scripted.Script{}, Config{})
	root := h.roots["sample"]
	sys := func() string { return systemPromptOfARun(h) }
	tick := time.Now().Add(-500 * time.Millisecond)
	os.Chtimes(root, tick, tick)
	if s := sys(); strings.Contains(s, "Project instructions") {
		t.Fatalf("instructions without a file: %s", s)
	}
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("Same tick.\n"), 0o644)
	os.Chtimes(root, tick, tick)
	time.Sleep(time.Until(tick.Add(1100 * time.Millisecond))) // the tick is over a second old
	if s := sys(); !strings.Contains(s, "Same tick.") {
		t.Fatalf("a file added in the tick of the root's last look is missed: %s", s)
	}
}

// The counts looked up by position are the counts of the messages there:
// for histories that interleave (two runs sharing a runtime), grow, and
// hold a message cut at a position where the whole one was counted.
func TestCountByPosition(t *testing.T) {
	history := func(run string, n, cut int) []message.Message {
		var msgs []message.Message
		for i := range n {
			m := message.Message{ID: fmt.Sprintf("%s-%d", run, i), Role: message.Tool, ToolCallID: "c", Content: strings.Repeat(run+" words ", i+1)}
			if i == cut {
				m.Content = "[cut]"
			}
			msgs = append(msgs, m)
		}
		return msgs
	}
	var c, fresh counter
	for n := range 30 {
		for _, msgs := range [][]message.Message{history("a", n, -1), history("bb", n+3, n/2), history("a", n, n-1)} {
			for i, m := range msgs {
				if got, want := c.messageAt(i, m), fresh.message(m); got != want {
					t.Fatalf("history of %d, message %s (%d bytes): counted %d at its position, %d by itself", n, m.ID, len(m.Content), got, want)
				}
			}
		}
	}
}
