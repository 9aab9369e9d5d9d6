//go:build linux

package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// bgProject makes the sample project a git repository whose ignored/
// folder (not scanned) holds the tests' signals, and returns its root and
// greet.go's committed text.
func bgProject(t *testing.T, h *harness) (string, string) {
	t.Helper()
	if h.rt.cfg.Sandbox.ABI() == 0 {
		t.Skip("no Landlock")
	}
	root := h.roots["sample"]
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("ignored/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, "ignored"), 0o755)
	gitT(t, root, "init", "-q")
	gitT(t, root, "add", ".")
	gitT(t, root, "commit", "-q", "-m", "start")
	b, err := os.ReadFile(filepath.Join(root, "greet.go"))
	if err != nil {
		t.Fatal(err)
	}
	return root, string(b)
}

// bgFiles are a checkpoint's files by name.
func bgFiles(c Checkpoint) map[string]FileChange {
	out := map[string]FileChange{}
	for _, f := range c.Files {
		out[f.Rel] = f
	}
	return out
}

// checkBgRewind checks that a rewind to checkpoint 1 puts greet.go back to
// HEAD's text and deletes made.txt.
func checkBgRewind(t *testing.T, h *harness, session, original string) {
	t.Helper()
	plan, err := h.rt.PlanRewind(context.Background(), session, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]FileRestore{}
	for _, f := range plan {
		got[f.Rel] = f
	}
	if f := got["greet.go"]; f.Text != original || f.Conflict || f.Reason != "" {
		t.Errorf("greet.go's restore: %+v", f)
	}
	if f := got["made.txt"]; !f.Delete || f.Conflict || f.Reason != "" || len(plan) != 2 {
		t.Errorf("the restores: %+v", plan)
	}
}

// A background process's files go to the checkpoint of the prompt that
// started it: one that outlives its run (BackgroundLinger), is taken over
// by the session's next prompt and writes while that prompt runs is still
// prompt 1's. greet.go, which the agent edited first, is restorable to
// its text before prompt 1, its lines counted against it; the file the
// process made is deleted by a rewind.
func TestBackgroundChangesGoToTheirPrompt(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "})}},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"background": true,
			"command": "while [ ! -e ignored/go ]; do sleep 0.05; done; sed -i s/Hi,/Howdy,/ greet.go; echo made > made.txt"})}},
		{Text: "started"},
		{ToolCalls: []scripted.ToolCall{call("process_wait", map[string]any{"id": "p1", "timeout_seconds": 600})}},
		{Text: "it ended"},
	}}, Config{BackgroundLinger: 10 * time.Minute})
	root, original := bgProject(t, h)
	res := h.run(context.Background(), Request{Prompt: "start it", Permissions: allowAll(true)})
	if res.Status != "done" {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	go func() { // once prompt 2 is under way, let the process write
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if cps, _ := h.rt.Checkpoints(context.Background(), res.Session); len(cps) == 2 {
				break
			}
		}
		os.WriteFile(filepath.Join(root, "ignored", "go"), nil, 0o644)
	}()
	res = h.run(context.Background(), Request{Session: res.Session, Prompt: "wait for it", Permissions: allowAll(true)})
	if b, _ := os.ReadFile(filepath.Join(root, "greet.go")); res.Status != "done" || !strings.Contains(string(b), "Howdy") {
		t.Fatalf("status %s, greet.go:\n%s", res.Status, b)
	}
	cps, err := h.rt.Checkpoints(context.Background(), res.Session)
	if err != nil || len(cps) != 2 {
		t.Fatalf("checkpoints: %v %+v", err, cps)
	}
	files := bgFiles(cps[0])
	if f := files["greet.go"]; f.Before != tools.Hash(original) || f.Unknown || f.Created || f.Added != 1 || f.Removed != 1 {
		t.Errorf("greet.go: %+v", f)
	}
	if f := files["made.txt"]; !f.Created || len(files) != 2 {
		t.Errorf("checkpoint 1's files: %+v", files)
	}
	if len(cps[1].Files) != 0 {
		t.Errorf("checkpoint 2's files: %+v", cps[1].Files)
	}
	checkBgRewind(t, h, res.Session, original)
}

// A background process still running when its run ends (here cancelled)
// is stopped, and what it changed is recorded before the run's result;
// so is one the editor stops (Registry.StopProcess) while its run goes on.
func TestBackgroundChangesAtItsEnd(t *testing.T) {
	for _, how := range []string{"run's end", "editor's stop"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"background": true,
					"command": "sed -i s/Hello/Howdy/ greet.go && echo made > made.txt && touch ignored/done && exec sleep 600"})}},
				{ToolCalls: []scripted.ToolCall{call("process_wait", map[string]any{"id": "p1", "timeout_seconds": 600})}},
				{Text: "it was stopped"},
			}}, Config{})
			root, original := bgProject(t, h)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { // once it wrote its files, end it
				for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
					if _, err := os.Stat(filepath.Join(root, "ignored", "done")); err == nil {
						break
					}
				}
				if how == "run's end" {
					cancel()
					return
				}
				for _, p := range h.reg.Processes(h.rt) {
					if err := h.reg.StopProcess(h.rt, p.Session, p.ID); err != nil {
						t.Error(err)
					}
				}
			}()
			res := h.run(ctx, Request{Prompt: "start it", Permissions: allowAll(true)})
			if want := map[bool]string{true: "cancelled", false: "done"}[how == "run's end"]; string(res.Status) != want {
				t.Fatalf("status %s, want %s: %s", res.Status, want, res.Error)
			}
			cps, err := h.rt.Checkpoints(context.Background(), res.Session)
			if err != nil || len(cps) != 1 {
				t.Fatalf("checkpoints: %v %+v", err, cps)
			}
			files := bgFiles(cps[0])
			if f := files["greet.go"]; f.Before != tools.Hash(original) || f.Unknown || f.After != tools.Hash(strings.ReplaceAll(original, "Hello", "Howdy")) {
				t.Errorf("greet.go: %+v", f)
			}
			if f := files["made.txt"]; !f.Created || len(cps[0].Files) != 2 {
				t.Errorf("checkpoint 1's files: %+v", cps[0].Files)
			}
			checkBgRewind(t, h, res.Session, original)
		})
	}
}

// Scans that overlap across prompts record a file once: a background
// process started by prompt 1 writes while prompt 2's command runs; each
// file is in exactly one of the two checkpoints (whichever scan saw it
// first), and a rewind to before prompt 1 puts both back.
func TestBackgroundAndCommandOverlap(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"background": true,
			"command": "while [ ! -e ignored/go ]; do sleep 0.05; done; sed -i s/Hello/Howdy/ greet.go && echo made > made.txt && touch ignored/done"})}},
		{Text: "started"},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "touch ignored/go; while [ ! -e ignored/done ]; do sleep 0.05; done"})}},
		{ToolCalls: []scripted.ToolCall{call("process_wait", map[string]any{"id": "p1", "timeout_seconds": 600})}},
		{Text: "both ended"},
	}}, Config{BackgroundLinger: 10 * time.Minute})
	_, original := bgProject(t, h)
	res := h.run(context.Background(), Request{Prompt: "start it", Permissions: allowAll(true)})
	res = h.run(context.Background(), Request{Session: res.Session, Prompt: "go", Permissions: allowAll(true)})
	cps, err := h.rt.Checkpoints(context.Background(), res.Session)
	if err != nil || len(cps) != 2 || res.Status != "done" {
		t.Fatalf("%s: checkpoints: %v %+v", res.Status, err, cps)
	}
	one, two := bgFiles(cps[0]), bgFiles(cps[1])
	for _, name := range []string{"greet.go", "made.txt"} {
		_, in1 := one[name]
		_, in2 := two[name]
		if in1 == in2 {
			t.Errorf("%s: in checkpoint 1 %v, in 2 %v (%+v / %+v)", name, in1, in2, cps[0].Files, cps[1].Files)
		}
	}
	if len(one)+len(two) != 2 {
		t.Errorf("files: %+v / %+v", cps[0].Files, cps[1].Files)
	}
	checkBgRewind(t, h, res.Session, original)
}
