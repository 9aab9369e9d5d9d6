//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// diskEditor applies edits straight to disk, as the headless client does.
type diskEditor struct {
	ws      *workspace.Workspace
	refuse  bool
	mu      sync.Mutex
	applied []tools.FileEdit
}

func (e *diskEditor) Edit(ctx context.Context, fe tools.FileEdit) (tools.EditResult, error) {
	if e.refuse {
		return tools.EditResult{Applied: false, FailureReason: "user rejected it"}, nil
	}
	old := ""
	if !fe.Create {
		if d, ok := e.ws.Document(fe.Path); ok {
			old = d.Text
		} else {
			b, err := os.ReadFile(fe.Path)
			if err != nil {
				return tools.EditResult{}, err
			}
			old = string(b)
		}
	}
	var changes []workspace.Change
	for _, te := range fe.Edits {
		r := te.Range
		changes = append(changes, workspace.Change{Range: &r, Text: te.NewText})
	}
	text, err := workspace.ApplyChanges(old, changes, e.ws.Encoding())
	if err != nil {
		return tools.EditResult{}, err
	}
	os.MkdirAll(filepath.Dir(fe.Path), 0o755)
	if err := os.WriteFile(fe.Path, []byte(text), 0o644); err != nil {
		return tools.EditResult{}, err
	}
	e.mu.Lock()
	e.applied = append(e.applied, fe)
	e.mu.Unlock()
	return tools.EditResult{Applied: true}, nil
}

func (e *diskEditor) Save(ctx context.Context, paths []string) (tools.SaveResult, error) {
	return tools.SaveResult{Saved: paths}, nil // edits are on disk already
}

type allowAll bool

func (a allowAll) AllowCommand(ctx context.Context, req tools.CommandRequest) (tools.Permission, error) {
	if bool(a) || req.Trusted {
		return tools.Permission{Allowed: true}, nil
	}
	return tools.Permission{Reason: "denied by the test"}, nil
}

type harness struct {
	t      testing.TB
	srv    *scripted.Server
	ws     *workspace.Workspace
	rt     *Runtime
	reg    *Registry // the live sessions (the core's, in a server)
	store  store.Store
	editor *diskEditor
	roots  map[string]string
	mu     sync.Mutex
	events []event.Event
}

// TestMain lets the test binary be the sandbox's helper.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

func copyFixture(t testing.TB, name string) string {
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("..", "testdata", "workspaces", name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

func newHarness(t testing.TB, script scripted.Script, cfg Config) *harness {
	t.Helper()
	srv, err := scripted.Start("127.0.0.1:0", script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h := &harness{t: t, srv: srv, ws: workspace.New(workspace.UTF16), roots: map[string]string{}, reg: NewRegistry()}
	for _, name := range []string{"sample", "other"} {
		root := copyFixture(t, name)
		if _, err := h.ws.Add(name, root); err != nil {
			t.Fatal(err)
		}
		h.roots[name] = root
	}
	h.editor = &diskEditor{ws: h.ws}
	if cfg.Store == nil {
		cfg.Store = store.NewMemory()
	}
	h.store = cfg.Store
	cfg.Workspace = h.ws
	if cfg.Sandbox == nil {
		sb, err := sandbox.New(true)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Sandbox = sb
		cfg.SandboxSettings = sandbox.Settings{Mode: sandbox.WorkspaceWrite, Temp: os.TempDir()}
	}
	cfg.Model = model.NewOpenAI(model.Config{BaseURL: srv.URL, Model: "scripted", APIKey: "sk-x", Backoff: time.Millisecond, Timeout: time.Minute})
	if h.rt, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) run(ctx context.Context, req Request) Result {
	h.t.Helper()
	if req.Editor == nil {
		req.Editor = h.editor
	}
	if req.Permissions == nil {
		req.Permissions = allowAll(false)
	}
	req.Events = func(e event.Event) {
		h.mu.Lock()
		h.events = append(h.events, e)
		h.mu.Unlock()
	}
	res, err := h.reg.Run(ctx, h.rt, req)
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	return res
}

func args(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func call(name string, a any) scripted.ToolCall {
	return scripted.ToolCall{Name: name, Args: args(a)}
}

// toolMessages returns the tool messages of a request the model received.
func toolMessages(req openai.ChatCompletionRequest) []openai.ChatCompletionMessage {
	var out []openai.ChatCompletionMessage
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out = append(out, m)
		}
	}
	return out
}

func TestRunListsReadsSearchesEditsAndAnswers(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{"pattern": "*.go"}), call("search", map[string]any{"pattern": "func Greet"})}},
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}},
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": `"Hello, " + name`, "new_text": `"Hello, " + name + "!"`})}},
		{Text: "I added an exclamation mark to Greet."},
	}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "Make the greeting excited"})
	if res.Status != "done" || res.Reply != "I added an exclamation mark to Greet." || res.Edits != 1 {
		t.Fatalf("result %+v", res)
	}
	b, _ := os.ReadFile(filepath.Join(h.roots["sample"], "greet.go"))
	if !strings.Contains(string(b), `"Hello, " + name + "!"`) {
		t.Fatalf("file not edited:\n%s", b)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	// The parallel calls' results arrive in call order.
	tm := toolMessages(reqs[1])
	if len(tm) != 2 || !strings.Contains(tm[0].Content, "greet.go") || !strings.Contains(tm[1].Content, "greet.go:3: func Greet") {
		t.Fatalf("turn 2 tool messages: %+v", tm)
	}
	if tm := toolMessages(reqs[2]); !strings.Contains(tm[2].Content, `    4| 	return "Hello, " + name`) {
		t.Fatalf("read_file result: %q", tm[2].Content)
	}
	if reqs[0].Messages[0].Role != openai.ChatMessageRoleSystem || !strings.Contains(reqs[0].Messages[0].Content, "Current project: sample") {
		t.Fatalf("system prompt: %q", reqs[0].Messages[0].Content)
	}
	// No language source: its tools are not offered; nor read_image: the test double's model takes no
	// images. The core tools all are (optional ones may be left out to fit the budget).
	offered := map[string]bool{}
	for _, tl := range reqs[0].Tools {
		offered[tl.Function.Name] = true
	}
	for _, name := range append(slices.Clone(tools.LangTools), "read_image") {
		if offered[name] {
			t.Errorf("%s offered", name)
		}
	}
	for _, name := range toolPriority {
		if !offered[name] {
			t.Errorf("%s not offered (%d tools offered)", name, len(offered))
		}
	}
	// Events: run.start first, run.end last, a tool.start/end per call, one edit.
	types := map[string]int{}
	for _, e := range h.events {
		types[string(e.Type())]++
	}
	if h.events[0].Type() != "run.start" || h.events[len(h.events)-1].Type() != "run.end" || types["tool.start"] != 4 || types["tool.end"] != 4 || types["edit"] != 1 || types["message.delta"] == 0 {
		t.Fatalf("events: %v", types)
	}
	// The session is stored with its transcript.
	sess, err := h.store.Session(context.Background(), res.Session)
	if err != nil || sess.Status != "done" || sess.Messages != 9 || sess.Project != "sample" || sess.Title != "Make the greeting excited" {
		t.Fatalf("session %+v %v", sess, err)
	}
}

func TestBadToolCallsBecomeMessages(t *testing.T) {
	bad := `{"path": "greet.go"`
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{
			{Name: "read_file", ArgsRaw: &bad},
			call("no_such_tool", map[string]any{}),
			call("read_file", map[string]any{"path": 42}),
			call("read_file", map[string]any{"path": "greet.go", "bogus": true}),
			call("boom", map[string]any{}),
		}},
		{Text: "recovered"},
	}}, Config{Tools: withPanicTool()})
	res := h.run(context.Background(), Request{Prompt: "try things"})
	if res.Status != "done" || res.Reply != "recovered" {
		t.Fatalf("result %+v", res)
	}
	tm := toolMessages(h.srv.Requests()[1])
	wants := []string{"not valid JSON", `unknown tool "no_such_tool"`, `argument "path" must be string`, `unknown argument "bogus"`, "tool boom crashed: kaboom"}
	if len(tm) != len(wants) {
		t.Fatalf("%d tool messages", len(tm))
	}
	for i, w := range wants {
		if !strings.Contains(tm[i].Content, w) {
			t.Errorf("tool message %d = %q, want %q", i, tm[i].Content, w)
		}
	}
}

func withPanicTool() tools.Set {
	s := tools.All()
	s["boom"] = tools.Tool{Name: "boom", Description: "panics", Schema: json.RawMessage(`{"type":"object","properties":{}}`),
		Run: func(ctx context.Context, env *tools.Env, args json.RawMessage) (tools.Result, error) { panic("kaboom") }}
	return s
}

func checkNoOrphans(t *testing.T, msgs []openai.ChatCompletionMessage) {
	t.Helper()
	calls := map[string]bool{}
	answered := map[string]bool{}
	for i, m := range msgs {
		if m.Role == openai.ChatMessageRoleTool {
			if !calls[m.ToolCallID] {
				t.Fatalf("message %d answers call %s that was not sent", i, m.ToolCallID)
			}
			answered[m.ToolCallID] = true
		}
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
	}
	for id := range calls {
		if !answered[id] {
			t.Fatalf("call %s sent without its answer", id)
		}
	}
	if len(msgs) > 1 && msgs[1].Role == openai.ChatMessageRoleTool {
		t.Fatal("history starts with a tool message")
	}
}

func TestWindowRules(t *testing.T) {
	ai := func(id string, calls ...string) message.Message {
		m := message.Message{ID: id, Role: message.AI}
		for _, c := range calls {
			m.ToolCalls = append(m.ToolCalls, message.ToolCall{ID: c, Name: "x", Args: "{}"})
		}
		return m
	}
	tool := func(id, call, content string) message.Message {
		return message.Message{ID: id, Role: message.Tool, ToolCallID: call, Content: content}
	}
	hum := message.Message{ID: "h", Role: message.Human, Content: "the task"}
	big := strings.Repeat("word ", 20000)
	tests := []struct {
		name      string
		in        []message.Message
		from      int  // the summary covers the messages before
		pinned    bool // h is the run's prompt
		lim       limits
		want      string // shown
		wantOlder string
	}{
		{name: "unanswered call dropped", in: []message.Message{hum, ai("a1", "c1"), ai("a2")}, lim: limits{tokens: 1e6}, want: "h a2"},
		{name: "unanswered last message kept", in: []message.Message{hum, ai("a1", "c1")}, lim: limits{tokens: 1e6}, want: "h a1"},
		{name: "partial answers dropped with their call", in: []message.Message{hum, ai("a1", "c1", "c2"), tool("t1", "c1", ""), ai("a2")}, lim: limits{tokens: 1e6}, want: "h a2"},
		{name: "orphan tool dropped", in: []message.Message{hum, tool("t1", "zz", ""), ai("a2")}, lim: limits{tokens: 1e6}, want: "h a2"},
		{name: "a turn is never split", in: []message.Message{hum, ai("a1", "c1", "c2"), tool("t1", "c1", ""), tool("t2", "c2", ""), ai("a2")},
			pinned: true, lim: limits{tokens: 1e6, messages: 3}, want: "h a2", wantOlder: "a1 t1 t2"},
		{name: "a whole turn fits", in: []message.Message{hum, ai("a1", "c1", "c2"), tool("t1", "c1", ""), tool("t2", "c2", ""), ai("a2")},
			pinned: true, lim: limits{tokens: 1e6, messages: 4}, want: "h a1 t1 t2 a2"},
		{name: "the token budget binds", in: []message.Message{hum, ai("a1"), ai("a2", "c1"), tool("t1", "c1", big), ai("a3")},
			pinned: true, lim: limits{tokens: 200}, want: "h a3", wantOlder: "a1 a2 t1"},
		{name: "the pinned prompt is shown even before the summary", in: []message.Message{hum, ai("a1"), ai("a2"), ai("a3")},
			from: 3, pinned: true, lim: limits{tokens: 1e6}, want: "h a3"},
		{name: "messages before the summary are not older", in: []message.Message{hum, ai("a1"), ai("a2"), ai("a3")},
			from: 2, lim: limits{tokens: 1e6, messages: 1}, want: "a3", wantOlder: "a2"},
		{name: "long tool output cut", in: []message.Message{hum, ai("a1", "c1"), tool("t1", "c1", strings.Repeat("x", 1000))},
			lim: limits{tokens: 1e6, toolBytes: 500}, want: "h a1 t1:cut"},
		{name: "a newest turn too large is cut to fit", in: []message.Message{hum, ai("a1", "c1"), tool("t1", "c1", big)},
			pinned: true, lim: limits{tokens: 2000}, want: "h a1 t1:cut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pinned []int
			if tt.pinned {
				pinned = []int{0}
			}
			var c counter
			w := selectWindow(tt.in, tt.from, pinned, tt.lim, &c)
			var got, older []string
			for _, m := range w.shown {
				s := m.ID
				if strings.Contains(m.Content, "cut:") {
					s += ":cut"
				}
				got = append(got, s)
			}
			olderMsgs, _, _ := w.older(tt.in, tt.from, pinned, 1e9, &c)
			for _, m := range olderMsgs {
				older = append(older, m.ID)
			}
			if strings.Join(got, " ") != tt.want || strings.Join(older, " ") != tt.wantOlder {
				t.Fatalf("shown %q older %q, want %q and %q", strings.Join(got, " "), strings.Join(older, " "), tt.want, tt.wantOlder)
			}
			if tt.lim.tokens < 1e6 && w.cost > tt.lim.tokens {
				t.Fatalf("the window costs %d tokens, over %d", w.cost, tt.lim.tokens)
			}
		})
	}
}

func TestSelectionReachesThePrompt(t *testing.T) {
	tests := []struct {
		name  string
		rng   workspace.Range
		lines string
		text  string
	}{
		{"within lines", workspace.Range{Start: workspace.Position{Line: 2}, End: workspace.Position{Line: 3, Character: 10}}, "lines 3-4", "func Greet(name string) string {\n\treturn \"H"},
		{"whole lines end at the next line's start", workspace.Range{Start: workspace.Position{Line: 2}, End: workspace.Position{Line: 4}}, "lines 3-4", "func Greet(name string) string {\n\treturn \"Hello, \" + name\n"},
		{"one empty line", workspace.Range{Start: workspace.Position{Line: 1}, End: workspace.Position{Line: 1}}, "lines 2-2", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}}, Config{})
			path := filepath.Join(h.roots["sample"], "greet.go")
			h.run(context.Background(), Request{Prompt: "Explain", Selection: &Selection{Path: path, Range: tt.rng}})
			got := h.srv.Requests()[0].Messages[1].Content
			want := "Explain\n\n(The user selected greet.go " + tt.lines + ":)\n```\n" + tt.text + "\n```"
			if got != want {
				t.Fatalf("prompt\n%q\nwant\n%q", got, want)
			}
		})
	}
}
