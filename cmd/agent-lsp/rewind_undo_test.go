//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// TestRewindUndoHeadless: `agent-lsp rewind ID --undo` takes the newest
// rewind back with the real binary: the files as before it (a file the user
// changed since is kept and listed) and the conversation (the next
// request holds prompt 2 again); with nothing left to undo it exits 1
// saying so, and --undo with --to is a usage error.
func TestRewindUndoHeadless(t *testing.T) {
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "a.txt", "content": "a1\n"})}},
		scripted.Turn{Text: "first"},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "a.txt", "old_text": "a1", "new_text": "a2"})}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "b.txt", "content": "b2\n"})}},
		scripted.Turn{Text: "second"},
		scripted.Turn{Text: "third"},
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
	files := func() string {
		return fileText(filepath.Join(c.workspace, "a.txt")) + fileText(filepath.Join(c.workspace, "b.txt"))
	}
	if out, errOut, code = c.run(t, "", "rewind", id, "--to", "2"); code != 0 || files() != "a1\n<absent>" || !strings.Contains(out, "--undo") {
		t.Fatalf("rewind: exit %d, files %q\n%s%s", code, files(), out, errOut)
	}
	os.WriteFile(filepath.Join(c.workspace, "a.txt"), []byte("mine\n"), 0o644) // the user changes a file the rewind wrote
	out, errOut, code = c.run(t, "", "rewind", id, "--undo")
	if code != 0 || files() != "mine\nb2\n" || !strings.Contains(out, "undid the rewind to before prompt 2 (conversation: true)") ||
		!strings.Contains(out, "kept a.txt: changed since the rewind changed it") || !strings.Contains(out, "restored b.txt") {
		t.Fatalf("undo: exit %d, files %q\n%s%s", code, files(), out, errOut)
	}
	if out, errOut, code = c.run(t, "", "run", "--json", "--session", id, "Third prompt"); code != 0 {
		t.Fatalf("third: exit %d\n%s%s", code, out, errOut)
	}
	if h := history(c); !strings.Contains(h, "Second prompt") || !strings.Contains(h, "second") {
		t.Fatalf("the request after the undo lacks prompt 2: %s", h)
	}
	if _, errOut, code = c.run(t, "", "rewind", id, "--undo"); code != 1 || !strings.Contains(errOut, "no rewind to undo") {
		t.Fatalf("a second undo: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = c.run(t, "", "rewind", id, "--undo", "--to", "1"); code != 2 {
		t.Fatalf("--undo with --to: exit %d\n%s", code, errOut)
	}
}

// fileText is a file's text, "<absent>" when it cannot be read.
func fileText(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<absent>"
	}
	return string(b)
}
