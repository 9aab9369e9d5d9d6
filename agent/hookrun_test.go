//go:build unix

package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/hooks"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// hookFile is a HookSource of one hooks document, run in the project.
type hookFile struct {
	doc   string
	calls int
}

func (f *hookFile) Hooks(ctx context.Context, p *workspace.Project) *hooks.Set {
	f.calls++
	cfg := hooks.Parse([]byte(f.doc), "hooks.json", hooks.SourceUser)
	s := &hooks.Set{}
	s.Add(cfg.Hooks, hooks.Exec{Dir: p.Root(), Env: []string{"PATH=" + os.Getenv("PATH")}})
	return s
}

// A pre_tool hook that exits 2 keeps run_command from running and the model
// reads its reason; post_tool hooks log every call with its result; a
// prompt hook's output joins the prompt; a stop hook sees the run end.
func TestToolHooks(t *testing.T) {
	script := scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "touch ran"}), call("list_files", map[string]any{})}},
		{Text: "done"},
	}}
	src := &hookFile{doc: `{
		"prompt": [{"command": "echo branch policy: small commits"}],
		"pre_tool": [{"matcher": "run_command", "command": "echo 'no commands here: use the build tool' >&2; exit 2"}],
		"post_tool": [{"command": "cat >> $AGENT_LSP_PROJECT_DIR/../hooks.log; echo >> $AGENT_LSP_PROJECT_DIR/../hooks.log"}],
		"stop": [{"command": "cat > $AGENT_LSP_PROJECT_DIR/../stop.json"}]}`}
	h := newHarness(t, script, Config{Hooks: src})
	res := h.run(context.Background(), Request{Prompt: "touch a file", Project: "sample"})
	if res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	root := h.roots["sample"]
	if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
		t.Fatal("the blocked command ran")
	}
	reqs := h.srv.Requests()
	if first := reqs[0].Messages[len(reqs[0].Messages)-1].Content; !strings.Contains(first, "branch policy: small commits") || !strings.Contains(first, "Context from a hook: your hooks.json") {
		t.Fatalf("prompt: %q", first)
	}
	tms := toolMessages(reqs[1])
	if len(tms) != 2 || !strings.Contains(tms[0].Content, "a hook blocked it") || !strings.Contains(tms[0].Content, "no commands here: use the build tool") {
		t.Fatalf("tool messages %+v", tms)
	}
	log, _ := os.ReadFile(filepath.Join(root, "..", "hooks.log"))
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"tool":"list_files"`) || !strings.Contains(lines[0], `"result":`) {
		t.Fatalf("post_tool log (the blocked call has no post_tool): %s", log)
	}
	stop, _ := os.ReadFile(filepath.Join(root, "..", "stop.json"))
	if !strings.Contains(string(stop), `"status":"done"`) || !strings.Contains(string(stop), `"reply":"done"`) {
		t.Fatalf("stop: %s", stop)
	}
	if src.calls != 1 {
		t.Fatalf("the source was asked %d times in one run", src.calls)
	}
}

func TestPromptHookRefuses(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{{Text: "never"}}}, Config{Hooks: &hookFile{doc: `{"prompt": [{"command": "echo 'no secrets in prompts' >&2; exit 2"}]}`}})
	_, err := h.reg.Run(context.Background(), h.rt, Request{Prompt: "here is my password", Project: "sample", Editor: h.editor, Permissions: allowAll(false)})
	if !errors.Is(err, ErrPromptRefused) || !strings.Contains(err.Error(), "no secrets in prompts") || len(h.srv.Requests()) != 0 {
		t.Fatalf("%v, %d requests", err, len(h.srv.Requests()))
	}
}

// A prompt given to a running session passes its prompt hooks too: a hook
// that refuses it keeps it out of the run.
func TestQueuedPromptPassesPromptHooks(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 2"})}},
		{Text: "done"}}}, Config{Hooks: &hookFile{doc: `{"prompt": [{"command": "grep -q secret && { echo 'no secrets' >&2; exit 2; }; exit 0"}]}`}})
	done := make(chan Result, 1)
	go func() { done <- h.run(context.Background(), Request{Prompt: "start", Permissions: allowAll(true)}) }()
	waitFor(t, "the slow tool", func() bool { return len(h.eventsOf("tool.start")) > 0 })
	session := h.eventsOf("tool.start")[0].Session
	if _, err := h.reg.Run(context.Background(), h.rt, Request{Session: session, Prompt: "the secret is 42"}); !errors.Is(err, ErrPromptRefused) {
		t.Fatalf("queued: %v", err)
	}
	if res, err := h.reg.Run(context.Background(), h.rt, Request{Session: session, Prompt: "also this"}); err != nil || res.Status != StatusQueued {
		t.Fatalf("%+v %v", res, err)
	}
	if res := <-done; res.Status != "done" {
		t.Fatalf("%+v", res)
	}
	for _, m := range h.srv.Requests()[1].Messages {
		if strings.Contains(m.Content, "secret is 42") {
			t.Fatal("the refused prompt reached the model")
		}
	}
}
