//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

func storedMessages(t *testing.T, s store.Store, thread, ns string) []message.Message {
	t.Helper()
	st, err := s.Load(context.Background(), thread, ns)
	if err != nil {
		t.Fatalf("load %s/%s: %v", thread, ns, err)
	}
	var out []message.Message
	for _, it := range st.Lists["messages"] {
		var m message.Message
		json.Unmarshal(it.Body, &m)
		out = append(out, m)
	}
	return out
}

func TestFileToolsStayInsideProjects(t *testing.T) {
	ws := workspace.New(workspace.UTF16)
	sample, other := copyFixture(t, "sample"), copyFixture(t, "other")
	ws.Add("sample", sample)
	ws.Add("other", other)
	env := &tools.Env{Workspace: ws, Project: "sample", Editor: &diskEditor{ws: ws}}
	set := tools.All()
	outside := []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "../other/index.js"}},
		{"read_file", map[string]any{"path": other + "/index.js"}},
		{"list_files", map[string]any{"path": ".."}},
		{"edit_file", map[string]any{"path": "../other/index.js", "old_text": "42", "new_text": "43"}},
		{"create_file", map[string]any{"path": "../escape.txt", "content": "x"}},
		{"read_file", map[string]any{"path": "../sample/greet.go", "project": "other"}},
	}
	for _, o := range outside {
		res := set.Call(context.Background(), env, message.ToolCall{Name: o.tool, Args: string(args(o.args))})
		if !res.IsError || !strings.Contains(res.Content, "outside project") {
			t.Errorf("%s %v: %q", o.tool, o.args, res.Content)
		}
	}
	// A cross-project read by name works, relative to that project's root.
	res := set.Call(context.Background(), env, message.ToolCall{Name: "read_file", Args: `{"path": "index.js", "project": "other"}`})
	if res.IsError || !strings.Contains(res.Content, "answer = 42") {
		t.Fatalf("cross-project read: %q", res.Content)
	}
	res = set.Call(context.Background(), env, message.ToolCall{Name: "read_file", Args: `{"path": "x", "project": "nope"}`})
	if !strings.Contains(res.Content, `unknown project "nope"`) {
		t.Fatalf("unknown project: %q", res.Content)
	}
}

func TestSwitchProjectTagsMessages(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("switch_project", map[string]any{"project": "other"})}},
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "index.js"})}},
		{Text: "switched"},
	}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "go to other"})
	msgs := storedMessages(t, h.store, res.Session, "")
	want := []string{"human@sample", "ai@sample", "tool@sample", "ai@other", "tool@other", "ai@other"}
	for i, m := range msgs {
		if m.Name != want[i] {
			t.Fatalf("message %d tagged %q, want %q", i, m.Name, want[i])
		}
	}
	if !strings.Contains(msgs[4].Content, "answer = 42") {
		t.Fatalf("read after switch: %q", msgs[4].Content)
	}
	if sess, _ := h.store.Session(context.Background(), res.Session); sess.Project != "other" {
		t.Fatalf("session project %q", sess.Project)
	}
	if !strings.Contains(h.srv.Requests()[2].Messages[0].Content, "Current project: other") {
		t.Fatal("system prompt not rebuilt for the new project")
	}
}

func TestRunCommandStatusPerProject(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "test", "project": "other"})}},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 5", "timeout_seconds": 1})}},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "rm -rf /"})}},
		{Text: "ok"},
	}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "test other", Permissions: allowOnly("sleep 5")})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	other, _ := h.ws.Project("other")
	sample, _ := h.ws.Project("sample")
	if s := other.Snapshot().Context.LastTest; s.Status != workspace.StatusSuccess {
		t.Fatalf("other's last test: %+v", s)
	}
	if s := sample.Snapshot().Context; s.LastTest.Status != workspace.StatusUnknown || s.LastBuild.Status != workspace.StatusUnknown {
		t.Fatalf("sample's context changed: %+v", s)
	}
	reqs := h.srv.Requests()
	if tm := toolMessages(reqs[2]); !strings.Contains(tm[1].Content, "timed out after 1s") {
		t.Fatalf("timeout result: %q", tm[1].Content)
	}
	if tm := toolMessages(reqs[3]); !strings.Contains(tm[2].Content, `running "rm -rf /" was not allowed: denied by the test`) {
		t.Fatalf("denied result: %q", tm[2].Content)
	}
}

type allowOnly string

func (a allowOnly) AllowCommand(ctx context.Context, req tools.CommandRequest) (tools.Permission, error) {
	return tools.Permission{Allowed: req.Trusted || req.Command == string(a), Reason: "denied by the test"}, nil
}

func TestRefusedEditReachesModel(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello", "new_text": "Bye"})}},
		{Text: "understood"},
	}}, Config{})
	h.editor.refuse = true
	res := h.run(context.Background(), Request{Prompt: "edit"})
	if res.Edits != 0 {
		t.Fatalf("edits %d", res.Edits)
	}
	tm := toolMessages(h.srv.Requests()[1])
	if !strings.Contains(tm[0].Content, "did not apply the edit of greet.go (user rejected it)") {
		t.Fatalf("refusal: %q", tm[0].Content)
	}
}

func TestRunErrors(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "x"}}}, Config{})
	cases := []struct {
		req  Request
		want error
	}{
		{Request{Prompt: "x", Session: "nope"}, ErrUnknownSession},
		{Request{Prompt: "x", Project: "nope"}, ErrUnknownProject},
	}
	for _, c := range cases {
		if _, err := h.reg.Run(context.Background(), h.rt, c.req); !errors.Is(err, c.want) {
			t.Errorf("%+v: err %v, want %v", c.req, err, c.want)
		}
	}
	if _, err := h.reg.Run(context.Background(), h.rt, Request{Prompt: "  "}); err == nil {
		t.Error("empty prompt accepted")
	}
	if _, err := h.reg.Resume(context.Background(), h.rt, Request{Session: "nope"}); !errors.Is(err, ErrUnknownSession) {
		t.Errorf("resume unknown: %v", err)
	}
}

// gatedStore holds the first checkpoint Put until gate is closed.
type gatedStore struct {
	store.Store
	once    sync.Once
	reached chan struct{}
	gate    chan struct{}
}

func (g *gatedStore) Put(ctx context.Context, cp store.Checkpoint) error {
	g.once.Do(func() {
		close(g.reached)
		<-g.gate
	})
	return g.Store.Put(ctx, cp)
}

// A session that is running but has not written its first checkpoint yet is
// running, not unknown: a resume is refused as busy, a prompt is queued (or,
// when the run ended meanwhile, runs next), and either way it is answered
// once, after the first.
func TestRunOnSessionBeforeItsFirstCheckpointIsBusy(t *testing.T) {
	st := &gatedStore{Store: store.NewMemory(), reached: make(chan struct{}), gate: make(chan struct{})}
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "first"}, {Text: "second"}}}, Config{Store: st})
	var session string
	var mu sync.Mutex
	started := make(chan struct{})
	done := make(chan Result, 1)
	go func() {
		res, err := h.reg.Run(context.Background(), h.rt, Request{Prompt: "one", Editor: h.editor, Permissions: allowAll(false), Events: func(e event.Event) {
			if e.Type() == "run.start" {
				mu.Lock()
				session = e.Session
				mu.Unlock()
				close(started)
			}
		}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-started
	<-st.reached
	mu.Lock()
	id := session
	mu.Unlock()
	if _, err := h.reg.Resume(context.Background(), h.rt, Request{Session: id}); !errors.Is(err, ErrSessionBusy) {
		t.Errorf("resume of a session that has not checkpointed yet: %v, want ErrSessionBusy", err)
	}
	second := make(chan Result, 1)
	go func() {
		res, err := h.reg.Run(context.Background(), h.rt, Request{Session: id, Prompt: "two", Editor: h.editor, Permissions: allowAll(false)})
		if err != nil {
			t.Error(err)
		}
		second <- res
	}()
	close(st.gate)
	first, next := <-done, <-second
	if first.Status != "done" || (next.Status != StatusQueued && next.Status != "done") {
		t.Fatalf("first run %+v, second prompt %+v", first, next)
	}
	var got []string
	for _, m := range storedMessages(t, h.store, id, "") {
		got = append(got, m.Content)
	}
	if strings.Join(got, " ") != "one first two second" {
		t.Fatalf("transcript %q", got)
	}
}

// A model that asks for 2,000 tool calls in one turn gets 32 run and the rest
// answered with an error; the run goes on.
func TestCallsPerTurnCapped(t *testing.T) {
	var calls []scripted.ToolCall
	for i := 0; i < 2000; i++ {
		calls = append(calls, call("read_file", map[string]any{"path": "greet.go"}))
	}
	h := newHarness(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "Summarize the conversation", Turns: []scripted.Turn{{Text: "read greet.go many times"}, {Text: "still reading"}}},
		{Match: "", Turns: []scripted.Turn{{ToolCalls: calls}, {Text: "read enough"}}}}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "read it a lot"})
	if res.Status != "done" || res.Reply != "read enough" {
		t.Fatalf("%+v", res)
	}
	stored := storedMessages(t, h.store, res.Session, "")
	ran, refused := 0, 0
	for _, m := range stored {
		switch {
		case strings.Contains(m.Content, "greet.go (5 lines)"):
			ran++
		case strings.Contains(m.Content, "at most 32 tool calls run in one turn"):
			refused++
		}
	}
	if ran != 32 || refused != 1968 {
		t.Fatalf("%d ran, %d refused (of %d stored messages)", ran, refused, len(stored))
	}
}

// Arguments over the limit are cut where they are stored, so they are not sent
// to the model again, and the call fails with a reason.
func TestOversizedArgumentsCut(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "big.txt", "content": huge})}},
		{Text: "ok"}}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "write a big file"})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	req := h.srv.Requests()[1]
	b, _ := json.Marshal(req)
	if len(b) > 64<<10 {
		t.Fatalf("the next request still carries %d bytes", len(b))
	}
	if tm := toolMessages(req); !strings.Contains(tm[0].Content, "over the 262144-byte limit") {
		t.Fatalf("tool result %q", tm[0].Content)
	}
	for _, m := range storedMessages(t, h.store, res.Session, "") {
		for _, c := range m.ToolCalls {
			if len(c.Args) > 1000 {
				t.Fatalf("stored arguments of %d bytes", len(c.Args))
			}
		}
	}
}

// A command line longer than the output cap runs and reports without panicking.
func TestLongCommandLine(t *testing.T) {
	line := "echo " + strings.Repeat("a", 20<<10)
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": line})}},
		{Text: "ok"}}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "echo a lot", Permissions: allowAll(true)})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	if tm := toolMessages(h.srv.Requests()[1]); !strings.Contains(tm[0].Content, "exit status 0") {
		t.Fatalf("tool result %q", tm[0].Content[:200])
	}
}

// Hostile repository contents: search does not follow a link out of the
// project or read a FIFO or /dev/zero; read_file refuses them; a symlinked
// project root lists and searches its files; a gigabyte file is read by line
// range only.
func TestHostileRepositoryFiles(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{
			call("search", map[string]any{"pattern": "root:|Greet"}),
			call("read_file", map[string]any{"path": "passwd"}),
			call("read_file", map[string]any{"path": "fifo"}),
			call("read_file", map[string]any{"path": "zero"}),
			call("read_file", map[string]any{"path": "big.log"}),
			call("read_file", map[string]any{"path": "big.log", "start_line": 2, "end_line": 3}),
			call("list_files", map[string]any{"project": "linked"}),
		}},
		{Text: "looked"}}}, Config{})
	root := h.roots["sample"]
	os.Symlink("/etc/passwd", filepath.Join(root, "passwd"))
	os.Symlink("/dev/zero", filepath.Join(root, "zero"))
	syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644)
	f, _ := os.Create(filepath.Join(root, "big.log"))
	f.WriteString("first\nsecond\nthird\n")
	f.Truncate(1 << 30)
	f.Close()
	link := filepath.Join(t.TempDir(), "linked")
	os.Symlink(h.roots["other"], link)
	if _, err := h.ws.Add("linked", link); err != nil {
		t.Fatal(err)
	}
	done := make(chan Result, 1)
	go func() { done <- h.run(context.Background(), Request{Prompt: "look around"}) }()
	select {
	case res := <-done:
		if res.Status != "done" {
			t.Fatalf("%+v", res)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("a hostile repository hung the tools")
	}
	tm := toolMessages(h.srv.Requests()[1])
	want := []string{"greet.go:3: func Greet", "symlink points outside", "named pipe", "symlink points outside", "read it in parts with start_line and end_line", "    2| second", "index.js"}
	for i, w := range want {
		if !strings.Contains(tm[i].Content, w) {
			t.Errorf("call %d: %q, want it to contain %q", i, tm[i].Content, w)
		}
	}
	if strings.Contains(tm[0].Content, "root:") {
		t.Errorf("search read /etc/passwd through a link: %s", tm[0].Content)
	}
}
