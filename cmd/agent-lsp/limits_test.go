//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// TestBudgetFlags: --max-tokens and --max-cost stop the run before the model
// call that would cross them (exit 3, the result's limit says which; the
// model got only the calls that fit), a resume has a fresh budget, and
// --max-cost without the model's price is a usage error (exit 2).
func TestBudgetFlags(t *testing.T) {
	u := &scripted.Usage{Prompt: 5000, Completion: 100}
	turns := []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{})}, Usage: u},
		{Text: "listed", Usage: u},
	}
	for _, tc := range []struct {
		name  string
		args  []string
		limit string
	}{
		{"tokens", []string{"--max-tokens", "5500"}, "tokens"},
		// $1 and $2 per million: the first call costs $0.0052.
		{"cost", []string{"--max-cost", "0.0055", "--prices", "scripted=1/2"}, "cost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t, turns...)
			out, errOut, code := c.run(t, "", append(append([]string{"run", "--json"}, tc.args...), "list the files")...)
			_, res := jsonLines(t, out)
			if code != 3 || res["status"] != "limit" || res["limit"] != tc.limit {
				t.Fatalf("exit %d, result %v\n%s", code, res, errOut)
			}
			if n := len(c.srv.Requests()); n != 1 {
				t.Fatalf("the model got %d requests, want 1", n)
			}
			session, _ := res["session"].(string)
			out, errOut, code = c.run(t, "", append([]string{"run", "--json", "--resume", session}, tc.args[2:]...)...)
			if _, res = jsonLines(t, out); code != 0 || res["status"] != "done" || res["reply"] != "listed" {
				t.Fatalf("resume: exit %d, result %v\n%s", code, res, errOut)
			}
		})
	}
	t.Run("cost without a price", func(t *testing.T) {
		c := newCLI(t, turns...)
		_, errOut, code := c.run(t, "", "run", "--max-cost", "1", "list the files")
		if code != 2 || !strings.Contains(errOut, "--max-cost needs the price of the model scripted") {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		if n := len(c.srv.Requests()); n != 0 {
			t.Fatalf("the model got %d requests", n)
		}
	})
}

// TestModeFlag: --mode plan offers no edit tool, refuses an edit the model
// makes anyway (the file is unchanged), and the result line carries the
// plan; a bad mode is a usage error.
func TestModeFlag(t *testing.T) {
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Bye, "})}},
		scripted.Turn{Text: "1. Change greet.go."})
	before, _ := os.ReadFile(filepath.Join(c.workspace, "greet.go"))
	out, errOut, code := c.run(t, "", "run", "--json", "--mode", "plan", "plan a change")
	_, res := jsonLines(t, out)
	if code != 0 || res["status"] != "done" || res["plan"] != "1. Change greet.go." {
		t.Fatalf("exit %d, result %v\n%s", code, res, errOut)
	}
	for _, tool := range c.srv.Requests()[0].Tools {
		if tool.Function.Name == "edit_file" || tool.Function.Name == "create_file" {
			t.Fatalf("plan mode offers %s", tool.Function.Name)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(c.workspace, "greet.go")); string(after) != string(before) {
		t.Fatalf("plan mode changed greet.go:\n%s", after)
	}
	if _, errOut, code := c.run(t, "", "run", "--mode", "yolo", "hi"); code != 2 || !strings.Contains(errOut, "mode must be agent, plan or ask") {
		t.Fatalf("--mode yolo: exit %d\n%s", code, errOut)
	}
}
