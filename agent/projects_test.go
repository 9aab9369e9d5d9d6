//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// A project's build and test status, recent errors and diagnostics summary
// are kept with the session: a runtime of a new process (a new workspace
// over the same folders and store) restores them when the session runs
// again, and its system prompt shows them.
func TestProjectContextLastsWithTheSession(t *testing.T) {
	db := store.NewMemory()
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "noted"}, {Text: "again"}}}, Config{Store: db})
	p, _ := h.ws.Project("sample")
	p.SetTest(workspace.Outcome{Status: workspace.StatusFailed, Command: "go test ./...", Summary: "exit status 1: FAIL greet"})
	p.AddError("go test ./...: exit status 1: FAIL greet")
	p.SetDiagnostics(workspace.Diagnostics{Server: "gopls", Errors: 2, Warnings: 1, Files: 1, Top: []string{"greet.go:4:9: error: undefined: Helo (compiler)"}})
	first := h.run(context.Background(), Request{Prompt: "remember this"})
	if first.Status != "done" {
		t.Fatalf("%+v", first)
	}

	// A new process: the same folders, the same store, a new workspace.
	ws := workspace.New(workspace.UTF16)
	for _, name := range []string{"sample", "other"} {
		ws.Add(name, h.roots[name])
	}
	fresh, _ := ws.Project("sample")
	if c := fresh.Snapshot().Context; c.LastTest.Status != workspace.StatusUnknown || len(c.RecentErrors) != 0 {
		t.Fatalf("a new workspace knows %+v", c)
	}
	rt, err := New(Config{Model: h.rt.cfg.Model, Workspace: ws, Store: db, Sandbox: h.rt.cfg.Sandbox, SandboxSettings: h.rt.cfg.SandboxSettings})
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewRegistry().Run(context.Background(), rt, Request{Session: first.Session, Prompt: "what failed?", Editor: h.editor})
	if err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	c := fresh.Snapshot().Context
	if c.LastTest.Status != workspace.StatusFailed || len(c.RecentErrors) != 1 || c.Diagnostics.Errors != 2 || c.Diagnostics.Top[0] != "greet.go:4:9: error: undefined: Helo (compiler)" {
		t.Fatalf("restored %+v", c)
	}
	reqs := h.srv.Requests()
	system := reqs[len(reqs)-1].Messages[0].Content
	for _, want := range []string{"(last: failed, exit status 1: FAIL greet)", "- recent errors:\n  - go test ./...: exit status 1: FAIL greet",
		"- diagnostics (gopls, latest): 2 errors, 1 warnings in 1 files\n  - greet.go:4:9: error: undefined: Helo (compiler)"} {
		if !strings.Contains(system, want) {
			t.Fatalf("the system prompt lacks %q:\n%s", want, system)
		}
	}
}

// What this process learned wins over what a session stored.
func TestRestoreKeepsWhatIsKnown(t *testing.T) {
	ws := workspace.New(workspace.UTF16)
	p, _ := ws.Add("p", t.TempDir())
	p.SetBuild(workspace.Outcome{Status: workspace.StatusSuccess, Command: "make"})
	saved := workspace.Saved{Root: p.Root(), LastBuild: workspace.Outcome{Status: workspace.StatusFailed},
		LastTest: workspace.Outcome{Status: workspace.StatusPending}, Diagnostics: workspace.Diagnostics{Errors: 1, At: time.Now()}}
	if !p.Restore(saved) {
		t.Fatal("nothing restored")
	}
	c := p.Snapshot().Context
	if c.LastBuild.Status != workspace.StatusSuccess || c.LastTest.Status != workspace.StatusUnknown || c.Diagnostics.Errors != 1 {
		t.Fatalf("%+v", c)
	}
}

// Subagent contexts are subagent- and 8 hex digits of the session, the AI
// message and the call's index: two calls with one ID (a local model that
// repeats call IDs) get two contexts.
func TestSubagentIDsDoNotShareAContext(t *testing.T) {
	same := func(task string) scripted.ToolCall {
		c := call("call_subagent", map[string]any{"task": task})
		c.ID = "call_0"
		return c
	}
	h := newHarness(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "task one", Turns: []scripted.Turn{{Text: "one done"}}},
		{Match: "task two", Turns: []scripted.Turn{{Text: "two done"}}},
		{Match: "delegate", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{same("task one"), same("task two")}}, {Text: "both"}}},
	}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "delegate"})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	subs, err := h.rt.Subagents(context.Background(), res.Session, "")
	if err != nil || len(subs) != 2 {
		t.Fatalf("%+v %v", subs, err)
	}
	id := regexp.MustCompile(`^subagent-[0-9a-f]{8}$`)
	if subs[0].ContextID == subs[1].ContextID || !id.MatchString(subs[0].ContextID) || !id.MatchString(subs[1].ContextID) {
		t.Fatalf("contexts %+v", subs)
	}
	for i, want := range []string{"one done", "two done"} {
		msgs := storedMessages(t, h.store, res.Session, subs[i].ContextID)
		if len(msgs) != 2 || msgs[1].Content != want {
			t.Fatalf("child %d: %+v", i, msgs)
		}
	}
	var ai message.Message
	for _, m := range storedMessages(t, h.store, res.Session, "") {
		if len(m.ToolCalls) == 2 {
			ai = m
		}
	}
	if subs[1].ContextID != SubagentID(res.Session, ai.ID, 1) {
		t.Fatalf("%s is not derived from the session, the message and the index", subs[1].ContextID)
	}
}

// A stored session whose child was started under the older ID (the call's
// ID) keeps it: resume finds that child.
func TestSubagentOldIDIsKept(t *testing.T) {
	db := store.NewMemory()
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "x"}}}, Config{Store: db})
	raw, _ := json.Marshal("sample")
	err := db.Put(context.Background(), store.Checkpoint{Thread: "s-old", Namespace: "subagent-call_abc", Step: 0, Status: store.StatusRunning,
		Values: map[string]json.RawMessage{"project": raw}})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.rt.subagentContext(context.Background(), "s-old", "01AI", 0, "call_abc"); got != "subagent-call_abc" {
		t.Fatalf("%s", got)
	}
	if got := h.rt.subagentContext(context.Background(), "s-old", "01AI", 1, "call_other"); got != SubagentID("s-old", "01AI", 1) {
		t.Fatalf("%s", got)
	}
}
