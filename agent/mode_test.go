//go:build unix

package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
)

func offeredTools(t *testing.T, h *harness, i int) []string {
	t.Helper()
	var names []string
	for _, tool := range h.srv.Requests()[i].Tools {
		names = append(names, tool.Function.Name)
	}
	return names
}

// A plan run is offered only the tools that read (no command tool without a
// sandbox that confines it); an edit_file the model makes anyway is refused
// in its tool result and the file is unchanged; the system prompt asks for
// a plan and the result carries it.
func TestPlanModeOffersOnlyReadingTools(t *testing.T) {
	sb, err := sandbox.New(true)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": `"Hello, " + name`, "new_text": `"Bye, " + name`})}},
		{Text: "1. Change Greet in greet.go."},
	}}, Config{Sandbox: sb, SandboxSettings: sandbox.Settings{Mode: sandbox.Off}})
	before, _ := os.ReadFile(filepath.Join(h.roots["sample"], "greet.go"))
	res := h.run(context.Background(), Request{Prompt: "plan a friendlier greeting", Mode: ModePlan})
	if res.Status != store.StatusDone || res.Plan != "1. Change Greet in greet.go." || res.Edits != 0 {
		t.Fatalf("result %+v", res)
	}
	offered := offeredTools(t, h, 0)
	for _, name := range []string{"edit_file", "create_file", "run_command"} {
		if slices.Contains(offered, name) {
			t.Errorf("plan mode offers %s: %v", name, offered)
		}
	}
	for _, name := range []string{"read_file", "list_files", "search", "call_subagent"} {
		if !slices.Contains(offered, name) {
			t.Errorf("plan mode does not offer %s: %v", name, offered)
		}
	}
	if sys := h.srv.Requests()[0].Messages[0].Content; !strings.Contains(sys, "## Plan mode") {
		t.Errorf("the system prompt does not ask for a plan:\n%s", sys)
	}
	tm := toolMessages(h.srv.Requests()[1])
	if len(tm) != 1 || !strings.Contains(tm[0].Content, "edit_file is not offered in plan mode") {
		t.Fatalf("the edit's tool result: %+v", tm)
	}
	if after, _ := os.ReadFile(filepath.Join(h.roots["sample"], "greet.go")); string(after) != string(before) {
		t.Fatalf("plan mode changed greet.go:\n%s", after)
	}
	// The session keeps its mode: its next run without one plans too.
	sess, _ := h.store.Session(context.Background(), res.Session)
	if sess.Mode != "plan" {
		t.Fatalf("session mode %q", sess.Mode)
	}
}

// Where the sandbox confines commands (Landlock), plan and ask runs are
// offered run_command, which then runs read-only: a command that writes
// in the project fails and the file is not made.
func TestAskModeCommandsRunReadOnly(t *testing.T) {
	sb, err := sandbox.New(true)
	if err != nil || sb.ABI() == 0 {
		t.Skip("no Landlock here")
	}
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "touch made-by-ask"})}},
		{Text: "it could not"},
	}}, Config{})
	res := h.run(context.Background(), Request{Prompt: "try to write", Mode: ModeAsk})
	if res.Status != store.StatusDone || res.Plan != "" {
		t.Fatalf("result %+v", res)
	}
	if !slices.Contains(offeredTools(t, h, 0), "run_command") || slices.Contains(offeredTools(t, h, 0), "edit_file") {
		t.Fatalf("ask mode offers %v", offeredTools(t, h, 0))
	}
	if _, err := os.Stat(filepath.Join(h.roots["sample"], "made-by-ask")); err == nil {
		t.Fatal("a command of an ask run wrote in the project")
	}
	tm := toolMessages(h.srv.Requests()[1])
	if len(tm) != 1 || strings.Contains(tm[0].Content, "exit code 0") {
		t.Fatalf("the command's result: %+v", tm)
	}
}
