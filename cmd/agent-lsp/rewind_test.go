//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// TestRewindHeadless drives the rewind with the real binary: two prompts
// change files, `sessions checkpoints` lists them, `rewind --files` puts
// prompt 2's files back on disk (a file the user changed since is kept and
// listed), `rewind --conversation` takes prompt 2 out of the next
// request's history, and `run --fork ID@2` starts a session from before it.
func TestRewindHeadless(t *testing.T) {
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "a.txt", "content": "a1\n"})}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "})}},
		scripted.Turn{Text: "first"},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "a.txt", "old_text": "a1", "new_text": "a2"})}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "b.txt", "content": "b2\n"})}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hi, ", "new_text": "Hey, "})}},
		scripted.Turn{Text: "second"},
		scripted.Turn{Text: "third"},
		scripted.Turn{Text: "fourth"},
	)
	out, errOut, code := c.run(t, "", "run", "--json", "First prompt")
	_, first := jsonLines(t, out)
	id, _ := first["session"].(string)
	if code != 0 || id == "" {
		t.Fatalf("first: exit %d %v\n%s", code, first, errOut)
	}
	if out, errOut, code = c.run(t, "", "run", "--json", "--session", id, "Second prompt"); code != 0 {
		t.Fatalf("second: exit %d\n%s%s", code, out, errOut)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(c.workspace, name))
		if err != nil {
			return "<absent>"
		}
		return string(b)
	}
	out, errOut, code = c.run(t, "", "sessions", "checkpoints", id, "--json")
	var list struct {
		Checkpoints []struct {
			Checkpoint int    `json:"checkpoint"`
			Prompt     string `json:"prompt"`
			Files      []struct {
				Path string `json:"path"`
			} `json:"files"`
		} `json:"checkpoints"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 || len(list.Checkpoints) != 2 || list.Checkpoints[1].Prompt != "Second prompt" ||
		len(list.Checkpoints[1].Files) != 3 {
		t.Fatalf("checkpoints: exit %d %v %s\n%s", code, err, out, errOut)
	}
	if out, _, _ = c.run(t, "", "sessions", "checkpoints", id); !strings.Contains(out, "Second prompt") || !strings.Contains(out, "b.txt +1 -0") {
		t.Fatalf("checkpoints as text:\n%s", out)
	}
	os.WriteFile(filepath.Join(c.workspace, "a.txt"), []byte("mine\n"), 0o644) // the user changes a file after the agent
	out, errOut, code = c.run(t, "", "rewind", id, "--to", "2", "--files", "--json")
	var rw struct {
		Conversation bool `json:"conversation"`
		Conflicts    []struct {
			Path string `json:"path"`
			Kept bool   `json:"kept"`
		} `json:"conflicts"`
	}
	if err := json.Unmarshal([]byte(out), &rw); err != nil || code != 0 || rw.Conversation || len(rw.Conflicts) != 1 || rw.Conflicts[0].Path != "a.txt" || !rw.Conflicts[0].Kept {
		t.Fatalf("rewind --files: exit %d %v %s\n%s", code, err, out, errOut)
	}
	if read("a.txt") != "mine\n" || read("b.txt") != "<absent>" || !strings.Contains(read("greet.go"), "Hi, ") {
		t.Fatalf("files after rewind --files: %q %q %q", read("a.txt"), read("b.txt"), read("greet.go"))
	}
	if out, errOut, code = c.run(t, "", "rewind", id, "--to", "2", "--conversation"); code != 0 || !strings.Contains(out, "conversation: true") {
		t.Fatalf("rewind --conversation: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code = c.run(t, "", "run", "--json", "--session", id, "Third prompt"); code != 0 {
		t.Fatalf("third: exit %d\n%s%s", code, out, errOut)
	}
	if h := history(c); strings.Contains(h, "Second prompt") || !strings.Contains(h, "First prompt") {
		t.Fatalf("the request after the rewind: %s", h)
	}
	out, errOut, code = c.run(t, "", "run", "--json", "--fork", id+"@2", "Fourth prompt")
	if _, res := jsonLines(t, out); code != 0 || res["session"] == id || res["reply"] != "fourth" {
		t.Fatalf("fork: exit %d %v\n%s", code, res, errOut)
	}
	if h := history(c); strings.Contains(h, "Third prompt") || !strings.Contains(h, "First prompt") {
		t.Fatalf("the fork's request: %s", h)
	}
	if _, errOut, code = c.run(t, "", "rewind", id, "--to", "7"); code != 1 || !strings.Contains(errOut, "unknown checkpoint 7") {
		t.Fatalf("an unknown checkpoint: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = c.run(t, "", "run", "--fork", "nonsense", "x"); code != 2 || !strings.Contains(errOut, "SESSION@N") {
		t.Fatalf("a bad --fork: exit %d\n%s", code, errOut)
	}
}

// history is the newest model request's messages, one per line.
func history(c *cli) string {
	reqs := c.srv.Requests()
	var lines []string
	for _, m := range reqs[len(reqs)-1].Messages {
		lines = append(lines, m.Content)
	}
	return strings.Join(lines, "\n")
}
