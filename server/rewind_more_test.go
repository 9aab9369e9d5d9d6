//go:build unix

package server_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// rewindRes is agent.rewind's result, as the tests read it.
type rewindRes struct {
	Checkpoint   int
	Rewind       string
	Undone       bool
	Conversation bool
	Restored     []struct{ Path string }
	Conflicts    []struct {
		Path string
		Kept bool
	}
}

// TestRewindPrunedHistory: with rewind.maxHistoryMB at 1, a prompt that
// writes 1.2 MB pushes the history over its cap; as the next prompt starts
// the oldest checkpoint's contents are pruned: agent.checkpoints lists its
// edited file as pruned, and a rewind to it is refused naming the file
// before anything changes (no edit sent, files and conversation as they
// were); a rewind to the newer checkpoint still works.
func TestRewindPrunedHistory(t *testing.T) {
	var bigs []scripted.ToolCall // 6 files of 200 KB that compress little (a tool call's arguments stay under 256 KB)
	for i := range 6 {
		raw := make([]byte, 150<<10)
		rand.Read(raw)
		bigs = append(bigs, call("create_file", map[string]any{"path": fmt.Sprintf("big%d.txt", i), "content": base64.StdEncoding.EncodeToString(raw)}))
	}
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "First prompt", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "a.txt", "content": "a1\n"})}},
			{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "})}},
			{Text: "First done."},
			{ToolCalls: bigs},
			{Text: "Second done."},
			{Text: "Third done."},
		}},
		// the window leaves the 1.2 MB turn out, so that the third prompt's request starts with it
		{Match: "Third prompt", Turns: []scripted.Turn{{Text: "Third done."}}},
	}})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	diskEditor(t, c)
	c.initialize(map[string]string{"sample": sample}, map[string]any{"rewind": map[string]any{"maxHistoryMB": 1}})
	var res runResult
	session := ""
	for _, p := range []string{"First prompt", "Second prompt", "Third prompt"} {
		if err := c.command("agent.run", map[string]any{"prompt": p, "session": session}, &res); err != nil || res.Status != "done" {
			t.Fatalf("%s: %+v %v", p, res, err)
		}
		session = res.Session
	}
	var list struct {
		Checkpoints []struct {
			Checkpoint int
			Files      []struct {
				Path       string
				Restorable bool
				Reason     string
			}
		}
	}
	if err := rcommand(c, "agent.checkpoints", map[string]any{"session": session}, &list); err != nil || len(list.Checkpoints) != 3 {
		t.Fatalf("checkpoints: %+v %v", list, err)
	}
	var greet bool
	for _, f := range list.Checkpoints[0].Files {
		if f.Path == "greet.go" {
			greet = !f.Restorable && strings.Contains(f.Reason, "pruned")
		}
	}
	if !greet {
		t.Fatalf("checkpoint 1 after the cap pruned it: %+v", list.Checkpoints[0].Files)
	}
	files := func() string {
		return readFile(t, filepath.Join(sample, "a.txt")) + "|" + readFile(t, filepath.Join(sample, "greet.go"))[:40] + "|" + readFile(t, filepath.Join(sample, "big5.txt"))[:8]
	}
	before, edits := files(), len(c.edits())
	for _, restore := range []string{"both", "files"} {
		var rw rewindRes
		err := rcommand(c, "agent.rewind", map[string]any{"session": session, "checkpoint": 1, "restore": restore}, &rw)
		if err == nil || !strings.Contains(err.Error(), "greet.go") || !strings.Contains(err.Error(), "pruned") {
			t.Fatalf("rewind (%s) to the pruned checkpoint: %+v %v", restore, rw, err)
		}
	}
	if files() != before || len(c.edits()) != edits {
		t.Fatalf("the refused rewind changed something: %q -> %q, %d edits", before, files(), len(c.edits())-edits)
	}
	if err := rcommand(c, "agent.checkpoints", map[string]any{"session": session}, &list); err != nil || len(list.Checkpoints) != 3 {
		t.Fatalf("checkpoints after the refusal: %+v %v", list, err)
	}
	var rw rewindRes
	if err := rcommand(c, "agent.rewind", map[string]any{"session": session, "checkpoint": 2, "restore": "files"}, &rw); err != nil ||
		readFile(t, filepath.Join(sample, "big0.txt")) != "<absent>" || len(rw.Restored) != 6 {
		t.Fatalf("rewind to checkpoint 2 (its file created, nothing pruned it needs): %+v %v", rw, err)
	}
}

// TestRewindUndo: a rewind's result names it, and agent.rewind with undo
// takes it back: the files it wrote are as before it and the conversation
// has prompt 2 again (the next request holds it); a file the user changed
// since a rewind is a conflict the user is asked about (kept); with
// nothing left to undo, or a conversation that went on since, the undo is
// refused before anything changes.
func TestRewindUndo(t *testing.T) {
	script := rewindScript()
	script.Conversations[0].Turns = append(script.Conversations[0].Turns[:7], scripted.Turn{Text: "Third done."}, scripted.Turn{Text: "Fourth done."})
	srv := model(t, script)
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
	session := ""
	for _, p := range []string{"First prompt", "Second prompt"} {
		if err := c.command("agent.run", map[string]any{"prompt": p, "session": session}, &res); err != nil || res.Status != "done" {
			t.Fatalf("%s: %+v %v", p, res, err)
		}
		session = res.Session
	}
	a, b, greet := filepath.Join(sample, "a.txt"), filepath.Join(sample, "b.txt"), filepath.Join(sample, "greet.go")
	state := func() string {
		g := "greet:other"
		for _, w := range []string{"Hello", "Hi", "Hey"} {
			if strings.Contains(readFile(t, greet), w+", ") {
				g = "greet:" + w
			}
		}
		return strings.TrimSpace(readFile(t, a)) + " " + strings.TrimSpace(readFile(t, b)) + " " + g
	}
	var rw, undo rewindRes
	if err := rcommand(c, "agent.rewind", map[string]any{"session": session, "checkpoint": 2}, &rw); err != nil || rw.Rewind == "" || state() != "a1 <absent> greet:Hi" {
		t.Fatalf("rewind: %+v %v, files %s", rw, err, state())
	}
	edits := len(c.edits())
	if err := rcommand(c, "agent.rewind", map[string]any{"session": session, "undo": true}, &undo); err != nil || !undo.Undone || undo.Rewind != rw.Rewind ||
		undo.Checkpoint != 2 || !undo.Conversation || len(undo.Restored) != 3 || state() != "a2 b2 greet:Hey" {
		t.Fatalf("undo: %+v %v, files %s", undo, err, state())
	}
	if len(c.edits()) != edits+1 || !strings.Contains(string(c.edits()[edits]), `"label":"Undo the rewind to before prompt 2"`) {
		t.Fatalf("the undo's applyEdits: %d", len(c.edits())-edits)
	}
	var list checkpointList
	if err := rcommand(c, "agent.checkpoints", map[string]any{"session": session}, &list); err != nil || len(list.Checkpoints) != 2 || list.Checkpoints[1].Prompt != "Second prompt" {
		t.Fatalf("checkpoints after the undo: %+v %v", list.Checkpoints, err)
	}
	if err := c.command("agent.run", map[string]any{"prompt": "Third prompt", "session": session}, &res); err != nil || res.Reply != "Third done." {
		t.Fatalf("third: %+v %v", res, err)
	}
	if h := lastRequest(srv); !strings.Contains(h, "Second prompt") || !strings.Contains(h, "Second done.") {
		t.Fatalf("the request after the undo lacks prompt 2:\n%s", h)
	}
	checkUndoConflict(t, c, session, a, &asked, state)
	checkUndoRefusals(t, c, session, state)
}

// checkUndoConflict: a files-only rewind, then the user changes a.txt: the
// undo asks about it and keeps it, and puts the other files back.
func checkUndoConflict(t *testing.T, c *lspClient, session, a string, asked *[]string, state func() string) {
	t.Helper()
	var rw, undo rewindRes
	if err := rcommand(c, "agent.rewind", map[string]any{"session": session, "checkpoint": 2, "restore": "files"}, &rw); err != nil || rw.Conversation || state() != "a1 <absent> greet:Hi" {
		t.Fatalf("rewind --files: %+v %v, files %s", rw, err, state())
	}
	os.WriteFile(a, []byte("mine\n"), 0o644) // the user changes a file the rewind wrote
	*asked = nil
	if err := rcommand(c, "agent.rewind", map[string]any{"session": session, "undo": true}, &undo); err != nil || undo.Conversation ||
		len(undo.Conflicts) != 1 || undo.Conflicts[0].Path != "a.txt" || !undo.Conflicts[0].Kept {
		t.Fatalf("undo with a conflict: %+v %v, files %s", undo, err, state())
	}
	if state() != "mine b2 greet:Hey" || len(*asked) != 1 || !strings.Contains((*asked)[0], "since the rewind") {
		t.Fatalf("after the undo with a conflict: files %s, asked %v", state(), *asked)
	}
}

// checkUndoRefusals: nothing left to undo; a conversation rewind after
// which a prompt was sent cannot be undone. Neither changes anything.
func checkUndoRefusals(t *testing.T, c *lspClient, session string, state func() string) {
	t.Helper()
	var undo rewindRes
	if err := rcommand(c, "agent.rewind", map[string]any{"session": session, "undo": true}, &undo); err == nil || !strings.Contains(err.Error(), "no rewind to undo") {
		t.Fatalf("an undo with nothing to undo: %v", err)
	}
	if err := rcommand(c, "agent.rewind", map[string]any{"session": session, "checkpoint": 3, "restore": "conversation"}, &undo); err != nil {
		t.Fatal(err)
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "Fourth prompt", "session": session}, &res); err != nil || res.Reply != "Fourth done." {
		t.Fatalf("fourth: %+v %v", res, err)
	}
	before := state()
	err := rcommand(c, "agent.rewind", map[string]any{"session": session, "undo": true}, &undo)
	if err == nil || !strings.Contains(err.Error(), "went on since") || state() != before {
		t.Fatalf("undo after a new prompt: %v, files %s -> %s", err, before, state())
	}
	var list checkpointList
	if err := rcommand(c, "agent.checkpoints", map[string]any{"session": session}, &list); err != nil || len(list.Checkpoints) != 3 || list.Checkpoints[2].Prompt != "Fourth prompt" {
		t.Fatalf("checkpoints after the refused undo: %+v %v", list.Checkpoints, err)
	}
	err = rcommand(c, "agent.rewind", map[string]any{"session": session, "undo": true, "checkpoint": 1}, &undo)
	if err == nil || !strings.Contains(err.Error(), "undo") {
		t.Fatalf("undo with a checkpoint: %v", err)
	}
}
