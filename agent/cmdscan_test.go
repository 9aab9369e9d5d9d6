//go:build unix

package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// A command's changes are recorded in its prompt's checkpoint: a file the
// agent edited before (its text known) is restorable to its content before
// the prompt, a file the command created is restored by deleting it, and a
// file whose earlier content is unknown (no git, not in the history) is
// listed not restorable, even one it only touched (nothing tells it did
// not change); a file with a known content it only touched is not listed.
func TestCommandChangesAreRecorded(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "})}},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sed -i s/Hi,/Hey,/ greet.go; echo new > new.txt; echo '// x' >> go.mod; touch greet_test.go"})}},
		{Text: "done"},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "touch greet.go"})}},
		{Text: "touched"},
	}}, Config{})
	root := h.roots["sample"]
	original, _ := os.ReadFile(filepath.Join(root, "greet.go"))
	res := h.run(context.Background(), Request{Prompt: "change things", Permissions: allowAll(true)})
	if b, _ := os.ReadFile(filepath.Join(root, "greet.go")); !strings.Contains(string(b), "Hey, ") {
		t.Fatalf("the command did not run: %s", b)
	}
	cps, err := h.rt.Checkpoints(context.Background(), res.Session)
	if err != nil || len(cps) != 1 {
		t.Fatalf("checkpoints: %v %+v", err, cps)
	}
	files := map[string]FileChange{}
	for _, f := range cps[0].Files {
		files[f.Rel] = f
	}
	if f := files["greet.go"]; f.Before != tools.Hash(string(original)) || f.Unknown || f.Created {
		t.Errorf("greet.go: %+v", f)
	}
	if f := files["new.txt"]; !f.Created || f.Added != 1 {
		t.Errorf("new.txt: %+v", f)
	}
	if f := files["go.mod"]; !f.Unknown {
		t.Errorf("go.mod: %+v", f)
	}
	if f := files["greet_test.go"]; !f.Unknown || len(files) != 4 {
		t.Errorf("files: %+v", files)
	}
	plan, err := h.rt.PlanRewind(context.Background(), res.Session, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range plan {
		switch f.Rel {
		case "greet.go":
			if f.Text != string(original) || f.Conflict {
				t.Errorf("greet.go's restore: %+v", f)
			}
		case "new.txt":
			if !f.Delete || f.Conflict {
				t.Errorf("new.txt's restore: %+v", f)
			}
		case "go.mod":
			if f.Reason != ReasonCommand {
				t.Errorf("go.mod's restore: %+v", f)
			}
		}
	}
	h.run(context.Background(), Request{Session: res.Session, Prompt: "touch it", Permissions: allowAll(true)})
	if cps, err = h.rt.Checkpoints(context.Background(), res.Session); err != nil || len(cps) != 2 || len(cps[1].Files) != 0 {
		t.Fatalf("checkpoints after a touch: %v %+v", err, cps)
	}
}

// Over the scan limit, a command's files are not looked for, and both the
// checkpoint and the command's output say so.
func TestCommandScanOverTheLimit(t *testing.T) {
	h := newHarness(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "echo new > new.txt"})}},
		{Text: "done"},
	}}, Config{ScanLimit: 2}) // the sample project has 3 files
	res := h.run(context.Background(), Request{Prompt: "make a file", Permissions: allowAll(true)})
	cps, err := h.rt.Checkpoints(context.Background(), res.Session)
	if err != nil || len(cps) != 1 || len(cps[0].Files) != 0 || len(cps[0].Notes) != 1 || !strings.Contains(cps[0].Notes[0], "more than 2 files") {
		t.Fatalf("checkpoints: %v %+v", err, cps)
	}
	var output string
	for _, e := range h.events {
		if end, ok := e.Data.(event.ToolEnd); ok && end.Name == "run_command" {
			output = end.Output
		}
	}
	if !strings.Contains(output, "rewind.scanLimit") {
		t.Fatalf("the command's output: %q", output)
	}
}
