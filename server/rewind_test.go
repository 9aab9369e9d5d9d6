//go:build unix

package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// diskEditor makes the test client apply workspace edits to disk as an
// editor that saves would: creates, deletes and text edits.
func diskEditor(t *testing.T, c *lspClient) {
	c.applyResult = func(params json.RawMessage) any {
		var p struct {
			Edit struct {
				DocumentChanges []struct {
					Kind         string `json:"kind"`
					URI          string `json:"uri"`
					TextDocument struct {
						URI string `json:"uri"`
					} `json:"textDocument"`
					Edits []struct {
						Range   workspace.Range `json:"range"`
						NewText string          `json:"newText"`
					} `json:"edits"`
				} `json:"documentChanges"`
			} `json:"edit"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return map[string]any{"applied": false, "failureReason": err.Error()}
		}
		for _, ch := range p.Edit.DocumentChanges {
			switch ch.Kind {
			case "create":
				os.WriteFile(uri.URI(ch.URI).FsPath(), nil, 0o644)
			case "delete":
				os.Remove(uri.URI(ch.URI).FsPath())
			default:
				path := uri.URI(ch.TextDocument.URI).FsPath()
				b, _ := os.ReadFile(path)
				changes := make([]workspace.Change, len(ch.Edits))
				for i, e := range ch.Edits {
					r := e.Range
					changes[len(ch.Edits)-1-i] = workspace.Change{Range: &r, Text: e.NewText}
				}
				text, err := workspace.ApplyChanges(string(b), changes, workspace.UTF16)
				if err != nil {
					return map[string]any{"applied": false, "failureReason": err.Error()}
				}
				os.WriteFile(path, []byte(text), 0o644)
			}
		}
		return map[string]any{"applied": true}
	}
}

// rcommand runs a command and decodes its result with encoding/json (the
// client's own decoder matches field names exactly).
func rcommand(c *lspClient, name string, args, result any) error {
	var raw json.RawMessage
	if err := c.command(name, args, &raw); err != nil {
		return err
	}
	return json.Unmarshal(raw, result)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<absent>"
	}
	return string(b)
}

// TestRewind: two prompts each change two files; the checkpoints list
// them; a rewind to checkpoint 2 puts prompt 2's files back as one
// labelled applyEdit (a file the user changed meanwhile is a conflict the
// user is asked about, and kept), and the next request's history lacks
// prompt 2; a fork from checkpoint 2 has prompt 1 only; bad checkpoints
// are refused by name.
func TestRewind(t *testing.T) {
	srv := model(t, rewindScript())
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	diskEditor(t, c)
	var asked []string
	c.askResult = func(params json.RawMessage) any {
		asked = append(asked, string(params))
		return map[string]string{"title": "Keep mine"}
	}
	c.initialize(map[string]string{"sample": sample}, nil)
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "First prompt"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("first run: %+v %v", res, err)
	}
	session := res.Session
	if err := c.command("agent.run", map[string]any{"prompt": "Second prompt", "session": session}, &res); err != nil || res.Status != "done" {
		t.Fatalf("second run: %+v %v", res, err)
	}
	a, b, greet := filepath.Join(sample, "a.txt"), filepath.Join(sample, "b.txt"), filepath.Join(sample, "greet.go")
	if readFile(t, a) != "a2\n" || readFile(t, b) != "b2\n" || !strings.Contains(readFile(t, greet), "Hey, ") {
		t.Fatalf("the runs' files: %q %q %q", readFile(t, a), readFile(t, b), readFile(t, greet))
	}
	var list checkpointList
	if err := rcommand(c, "agent.checkpoints", map[string]any{"session": session}, &list); err != nil {
		t.Fatal(err)
	}
	cps := list.Checkpoints
	if len(cps) != 2 || cps[0].Prompt != "First prompt" || cps[1].Checkpoint != 2 || len(cps[0].Files) != 2 || len(cps[1].Files) != 3 ||
		cps[1].Files[0].Path != "a.txt" || !cps[1].Files[0].Restorable || cps[1].Files[0].Added != 1 || cps[1].Files[0].Removed != 1 {
		t.Fatalf("checkpoints: %+v", cps)
	}
	checkCheckpointFile(t, c, session, a, b)
	os.WriteFile(greet, []byte("// the user's\n"), 0o644) // the user changes a file the agent changed
	edits := len(c.edits())
	var rw struct {
		Conversation bool
		Restored     []struct{ Path string }
		Conflicts    []struct {
			Path string
			Kept bool
		}
	}
	if err := rcommand(c, "agent.rewind", map[string]any{"session": session, "checkpoint": 2}, &rw); err != nil {
		t.Fatal(err)
	}
	if !rw.Conversation || len(rw.Restored) != 2 || len(rw.Conflicts) != 1 || rw.Conflicts[0].Path != "greet.go" || !rw.Conflicts[0].Kept || len(asked) != 1 ||
		!strings.Contains(asked[0], "Restore anyway") {
		t.Fatalf("rewind: %+v, asked %v", rw, asked)
	}
	if len(c.edits()) != edits+1 || !strings.Contains(string(c.edits()[edits]), `"label":"Rewind to before prompt 2"`) {
		t.Fatalf("the rewind's applyEdits: %d, %s", len(c.edits())-edits, c.edits()[len(c.edits())-1])
	}
	if readFile(t, a) != "a1\n" || readFile(t, b) != "<absent>" || readFile(t, greet) != "// the user's\n" {
		t.Fatalf("files after the rewind: %q %q %q", readFile(t, a), readFile(t, b), readFile(t, greet))
	}
	if err := c.command("agent.run", map[string]any{"prompt": "Third prompt", "session": session}, &res); err != nil || res.Status != "done" {
		t.Fatalf("third run: %+v %v", res, err)
	}
	reqs := srv.Requests()
	var history []string
	for _, m := range reqs[len(reqs)-1].Messages {
		history = append(history, m.Content)
	}
	if slices.Contains(history, "Second prompt") || !slices.Contains(history, "First prompt") || !slices.Contains(history, "Third prompt") {
		t.Fatalf("the next request's history: %q", history)
	}
	if err := rcommand(c, "agent.checkpoints", map[string]any{"session": session}, &list); err != nil || len(list.Checkpoints) != 2 || list.Checkpoints[1].Prompt != "Third prompt" {
		t.Fatalf("checkpoints after the rewind and a new prompt: %+v %v", list.Checkpoints, err)
	}
	checkFork(t, c, session, a)
	checkRetry(t, c, srv, session)
	checkRefusals(t, c, session)
}

// checkRefusals: an unknown checkpoint and an unknown session are refused by name.
func checkRefusals(t *testing.T, c *lspClient, session string) {
	t.Helper()
	var list checkpointList
	err := rcommand(c, "agent.rewind", map[string]any{"session": session, "checkpoint": 9}, &list)
	if err == nil || !strings.Contains(err.Error(), "unknown checkpoint 9") {
		t.Fatalf("an unknown checkpoint: %v", err)
	}
	err = rcommand(c, "agent.checkpoints", map[string]any{"session": "s-nosuch"}, &list)
	if err == nil || !strings.Contains(err.Error(), "s-nosuch") {
		t.Fatalf("an unknown session: %v", err)
	}
}

// checkCheckpointFile: a file's content before prompt 2 (the left side of
// "changes since here"), a file prompt 2 created, and one no prompt changed.
func checkCheckpointFile(t *testing.T, c *lspClient, session, a, b string) {
	t.Helper()
	var f struct {
		Path    string
		Exists  bool
		Content string
	}
	if err := rcommand(c, "agent.checkpointFile", map[string]any{"session": session, "checkpoint": 2, "uri": string(uri.File(a))}, &f); err != nil ||
		f.Path != "a.txt" || !f.Exists || f.Content != "a1\n" {
		t.Fatalf("a.txt before prompt 2: %+v %v", f, err)
	}
	f.Exists = true
	if err := rcommand(c, "agent.checkpointFile", map[string]any{"session": session, "checkpoint": 2, "uri": string(uri.File(b))}, &f); err != nil || f.Exists {
		t.Fatalf("b.txt, created by prompt 2: %+v %v", f, err)
	}
	other := filepath.Join(filepath.Dir(a), "notes.md")
	err := rcommand(c, "agent.checkpointFile", map[string]any{"session": session, "checkpoint": 2, "uri": string(uri.File(other))}, &f)
	if err == nil || !strings.Contains(err.Error(), "no prompt of session") {
		t.Fatalf("a file no prompt changed: %v", err)
	}
}

// checkFork: a fork from checkpoint 2 holds prompt 1 only; the files stay.
func checkFork(t *testing.T, c *lspClient, session, a string) {
	t.Helper()
	var fork struct{ Session string }
	if err := rcommand(c, "agent.fork", map[string]any{"session": session, "checkpoint": 2}, &fork); err != nil || fork.Session == "" || fork.Session == session {
		t.Fatalf("fork: %+v %v", fork, err)
	}
	var view struct{ Messages []struct{ Content string } }
	if err := rcommand(c, "agent.session", map[string]any{"session": fork.Session}, &view); err != nil || len(view.Messages) == 0 ||
		view.Messages[0].Content != "First prompt" || strings.Contains(readFile(t, a), "x") {
		t.Fatalf("the fork: %+v %v", view, err)
	}
	for _, m := range view.Messages {
		if strings.Contains(m.Content, "Third") {
			t.Fatalf("the fork holds prompt 2 and later: %+v", view.Messages)
		}
	}
}

// rewindScript: the first prompt creates a.txt and edits greet.go; the
// second edits a.txt, creates b.txt and edits greet.go again; the third
// answers.
func rewindScript() scripted.Script {
	return scripted.Script{Conversations: []scripted.Conversation{
		{Match: "First prompt", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "a.txt", "content": "a1\n"})}},
			{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "})}},
			{Text: "First done."},
			// the session's second prompt
			{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "a.txt", "old_text": "a1", "new_text": "a2"})}},
			{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "b.txt", "content": "b2\n"})}},
			{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hi, ", "new_text": "Hey, "})}},
			{Text: "Second done."},
			{Text: "Third done."},  // its third
			{Text: "Third again."}, // the third retried
		}},
	}}
}

// checkpointList is agent.checkpoints' result, as the test reads it.
type checkpointList struct {
	Checkpoints []struct {
		Checkpoint int
		Prompt     string
		Model      string
		Files      []struct {
			Path       string
			Restorable bool
			Added      int
			Removed    int
		}
	}
}

// checkRetry: agent.run with retry sends the last prompt again, in place
// of the answered one: the request holds it once, and the listing one
// checkpoint for it.
func checkRetry(t *testing.T, c *lspClient, srv *scripted.Server, session string) {
	t.Helper()
	var res runResult
	if err := c.command("agent.run", map[string]any{"session": session, "retry": true}, &res); err != nil || res.Status != "done" || res.Reply != "Third again." {
		t.Fatalf("retry: %+v %v", res, err)
	}
	reqs := srv.Requests()
	n := 0
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Content == "Third prompt" {
			n++
		}
		if m.Content == "Third done." {
			t.Fatalf("the retried request holds the first answer: %v", reqs[len(reqs)-1].Messages)
		}
	}
	var list checkpointList
	if err := rcommand(c, "agent.checkpoints", map[string]any{"session": session}, &list); err != nil || n != 1 || len(list.Checkpoints) != 2 {
		t.Fatalf("after the retry: %d copies of the prompt, checkpoints %+v %v", n, list.Checkpoints, err)
	}
	err := c.command("agent.run", map[string]any{"session": session, "retry": true, "prompt": "x"}, &res)
	if err == nil || !strings.Contains(err.Error(), "retry") {
		t.Fatalf("retry with a prompt: %v", err)
	}
}
