//go:build unix

package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// fakeEditor is an editor with buffers, over the real binary's connection:
// it opens documents, applies workspace edits to its buffers (refusing an
// edit whose version is not the buffer's, as an honest client does), tells
// the server every change (didOpen, didChange), and saves on request.
type fakeEditor struct {
	c *lspClient

	mu      sync.Mutex // guards the fields below
	text    map[string]string
	version map[string]int32
	saved   []string          // paths saved, in order
	failOn  map[string]string // path -> why saving it fails
	onSave  func(path, text string) string
	onApply func(path, text string) string // what the user makes of an applied edit (a review)
	// writeAfter delays a save's write past its answer (a remote file
	// system); writeNever answers "saved" and never writes.
	writeAfter time.Duration
	writeNever bool
	// hidden: a file the editor opens to apply an edit stays in a buffer
	// it does not show the server (no didOpen).
	hidden  bool
	applied []string // labels, in order
}

func newFakeEditor(c *lspClient, saves bool) *fakeEditor {
	e := &fakeEditor{c: c, text: map[string]string{}, version: map[string]int32{}, failOn: map[string]string{}}
	c.applyResult = e.apply
	if saves {
		c.saveResult = e.save
	}
	return e
}

func (e *fakeEditor) notify(method string, params any) {
	e.c.conn.Notify(context.Background(), method, params)
}

// open opens path as the editor does, with its text from disk.
func (e *fakeEditor) open(path string) {
	b, _ := os.ReadFile(path)
	e.mu.Lock()
	e.text[path], e.version[path] = string(b), 1
	e.mu.Unlock()
	e.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri.File(path), "languageId": "go", "version": 1, "text": string(b)}})
}

// set replaces a buffer's text as a user would, unsaved.
func (e *fakeEditor) set(path, text string) {
	e.mu.Lock()
	e.version[path]++
	e.text[path] = text
	v := e.version[path]
	e.mu.Unlock()
	e.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri.File(path), "version": v},
		"contentChanges": []any{map[string]any{"text": text}}})
}

func (e *fakeEditor) buffer(path string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.text[path]
}

func (e *fakeEditor) apply(raw json.RawMessage) any {
	var p struct {
		Label string `json:"label"`
		Edit  struct {
			DocumentChanges []json.RawMessage `json:"documentChanges"`
		} `json:"edit"`
	}
	json.Unmarshal(raw, &p)
	for _, dc := range p.Edit.DocumentChanges {
		var ch struct {
			Kind         string `json:"kind"`
			URI          string `json:"uri"`
			TextDocument struct {
				URI     string `json:"uri"`
				Version *int32 `json:"version"`
			} `json:"textDocument"`
			Edits []struct {
				Range   workspace.Range `json:"range"`
				NewText string          `json:"newText"`
			} `json:"edits"`
		}
		json.Unmarshal(dc, &ch)
		if ch.Kind == "create" {
			continue
		}
		path := uri.URI(ch.TextDocument.URI).FsPath()
		e.mu.Lock()
		text, open := e.text[path]
		if !open {
			b, _ := os.ReadFile(path)
			text = string(b)
		}
		if ch.TextDocument.Version != nil && (!open || *ch.TextDocument.Version != e.version[path]) {
			e.mu.Unlock()
			return map[string]any{"applied": false, "failureReason": fmt.Sprintf("the buffer is at version %d, the edit is for %d", e.version[path], *ch.TextDocument.Version)}
		}
		var changes []workspace.Change
		for _, te := range ch.Edits {
			r := te.Range
			changes = append(changes, workspace.Change{Range: &r, Text: te.NewText})
		}
		// An editor applies a document's edits against its text before them.
		for i, j := 0, len(changes)-1; i < j; i, j = i+1, j-1 {
			changes[i], changes[j] = changes[j], changes[i]
		}
		newText, err := workspace.ApplyChanges(text, changes, workspace.UTF16)
		if err != nil {
			e.mu.Unlock()
			return map[string]any{"applied": false, "failureReason": err.Error()}
		}
		if e.onApply != nil {
			newText = e.onApply(path, newText)
		}
		e.text[path] = newText
		e.version[path]++
		v := e.version[path]
		e.applied = append(e.applied, p.Label)
		e.mu.Unlock()
		if !open && e.hidden {
			continue
		} else if !open {
			e.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri.File(path), "languageId": "go", "version": v, "text": newText}})
		} else {
			e.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri.File(path), "version": v},
				"contentChanges": []any{map[string]any{"text": newText}}})
		}
	}
	return map[string]any{"applied": true}
}

func (e *fakeEditor) save(raw json.RawMessage) any {
	var p struct {
		URIs []string `json:"uris"`
	}
	json.Unmarshal(raw, &p)
	saved, failed := []string{}, []map[string]string{}
	for _, u := range p.URIs {
		path := uri.URI(u).FsPath()
		e.mu.Lock()
		if why, ok := e.failOn[path]; ok {
			e.mu.Unlock()
			failed = append(failed, map[string]string{"uri": u, "reason": why})
			continue
		}
		text := e.text[path]
		format := e.onSave
		e.mu.Unlock()
		if format != nil {
			if t := format(path, text); t != text {
				e.set(path, t) // a formatter on save changes the buffer first
				text = t
			}
		}
		e.mu.Lock()
		e.saved = append(e.saved, path)
		after, never := e.writeAfter, e.writeNever
		e.mu.Unlock()
		switch {
		case never:
		case after > 0:
			time.AfterFunc(after, func() { os.WriteFile(path, []byte(text), 0o644) })
		default:
			os.WriteFile(path, []byte(text), 0o644)
			e.notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": u}})
		}
		saved = append(saved, u)
	}
	return map[string]any{"saved": saved, "failed": failed}
}

// toolResults maps each tool call ID to what the model was told, from every request.
func toolResults(srv *scripted.Server) map[string]string {
	out := map[string]string{}
	for _, req := range srv.Requests() {
		for _, m := range req.Messages {
			if m.ToolCallID != "" {
				out[m.ToolCallID] = m.Content
			}
		}
	}
	return out
}

// addSubTurns: edit greet.go to add Sub, then print the file from disk.
func addSubTurns() []scripted.Turn {
	return []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{withID(call("edit_file", map[string]any{"path": "greet.go", "old_text": "func Greet", "new_text": "func Sub(a, b int) int { return a - b }\n\nfunc Greet"}), "call_edit")}},
		{ToolCalls: []scripted.ToolCall{withID(call("run_command", map[string]any{"command": "grep -c 'func Sub' greet.go"}), "call_grep")}},
		{Text: "done"},
	}
}

// Before a command runs, the documents the agent edited are saved by the
// editor (agent/saveDocuments), so the command sees them; without the
// capability, or when saving fails, the result says which edited files the
// command did not see; the user's own unsaved files are never saved and
// are named too.
func TestSaveBeforeCommands(t *testing.T) {
	for _, tc := range []struct {
		name       string
		saves      bool
		fail       string // why saving greet.go fails
		writeAfter time.Duration
		writeNever bool
		want       string // in the grep's result
		wantSaved  bool
	}{
		{name: "saved", saves: true, want: "exit status 0\n", wantSaved: true},
		{name: "written after the answer", saves: true, writeAfter: 300 * time.Millisecond, want: "exit status 0\n", wantSaved: true},
		{name: "answered saved, never written", saves: true, writeNever: true,
			want: "unsaved in the editor: greet.go (your edit; the editor answered that it saved it, but the file on disk does not have the editor's text), greet_test.go (the user's)"},
		{name: "no capability", saves: false, want: "note: the command ran on the files on disk; unsaved in the editor: greet.go (your edit; the editor does not save for the agent), greet_test.go (the user's)"},
		{name: "save fails", saves: true, fail: "read-only file", want: "unsaved in the editor: greet.go (your edit; read-only file), greet_test.go (the user's)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := model(t, scripted.Script{Turns: addSubTurns()})
			sample := copyFixture(t, "sample")
			c := startServer(t, envFor(t, srv)...)
			e := newFakeEditor(c, tc.saves)
			greet, tests := filepath.Join(sample, "greet.go"), filepath.Join(sample, "greet_test.go")
			if tc.fail != "" {
				e.failOn[greet] = tc.fail
			}
			e.writeAfter, e.writeNever = tc.writeAfter, tc.writeNever
			c.initialize(map[string]string{"sample": sample}, map[string]any{"permissions": map[string]any{"allow": []string{"grep *"}}})
			e.open(greet)
			e.open(tests)
			e.set(tests, e.buffer(tests)+"\n// the user's unsaved work\n")
			var res runResult
			if err := c.command("agent.run", map[string]any{"prompt": "Add Sub and check it is there"}, &res); err != nil || res.Status != "done" {
				t.Fatalf("%+v %v", res, err)
			}
			got := toolResults(srv)["call_grep"]
			if !strings.Contains(got, tc.want) {
				t.Fatalf("the command's result:\n%s\nwant %q", got, tc.want)
			}
			disk, _ := os.ReadFile(greet)
			if strings.Contains(string(disk), "func Sub") != tc.wantSaved {
				t.Fatalf("greet.go on disk: %s", disk)
			}
			if b, _ := os.ReadFile(tests); strings.Contains(string(b), "the user's unsaved work") {
				t.Fatal("the agent saved the user's own file")
			}
		})
	}
}

// An edit the editor applied in a buffer it never showed the server (no
// didOpen), saved with a write that lands after the editor's answer: the
// save counts once the disk holds the edit, so the command sees it. (The
// server's own copy cannot tell: it never had the file open.)
func TestSaveOfAnEditTheServerDidNotSee(t *testing.T) {
	srv := model(t, scripted.Script{Turns: addSubTurns()})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	e := newFakeEditor(c, true)
	e.hidden, e.writeAfter = true, 300*time.Millisecond
	c.initialize(map[string]string{"sample": sample}, map[string]any{"permissions": map[string]any{"allow": []string{"grep *"}}})
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "Add Sub and check it is there"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if got := toolResults(srv)["call_grep"]; !strings.Contains(got, "exit status 0\n") {
		t.Fatalf("the command ran before the edit was on disk:\n%s", got)
	}
}

// A formatter on save changes a file the agent edited: the command's result
// tells the model, as information.
func TestSaveThatReformatsIsReported(t *testing.T) {
	srv := model(t, scripted.Script{Turns: addSubTurns()})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	e := newFakeEditor(c, true)
	e.onSave = func(path, text string) string {
		return strings.ReplaceAll(text, "{ return a - b }", "{\n\treturn a - b\n}")
	}
	c.initialize(map[string]string{"sample": sample}, map[string]any{"permissions": map[string]any{"allow": []string{"grep *"}}})
	e.open(filepath.Join(sample, "greet.go"))
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "Add Sub and check it is there"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	got := toolResults(srv)["call_grep"]
	if !strings.Contains(got, "note: saving changed greet.go (lines 3-5") || !strings.Contains(got, "exit status 0") {
		t.Fatalf("the command's result:\n%s", got)
	}
}

// Two edits of one file in one turn run one after the other, the second
// computed against the text the first left and carrying its version: an
// editor that refuses stale versions applies both. A user who types between
// the agent reading the file and the edit arriving makes the edit stale: it
// is refused and the model is told to read the file again.
func TestEditsOfOneFileAreSerialized(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{
			withID(call("edit_file", map[string]any{"path": "greet.go", "old_text": "func Greet", "new_text": "// Greet says hello.\nfunc Greet"}), "call_a"),
			withID(call("edit_file", map[string]any{"path": "greet.go", "old_text": "package sample", "new_text": "// Package sample greets.\npackage sample"}), "call_b"),
			withID(call("create_file", map[string]any{"path": "more.go", "content": "package greet\n"}), "call_c"),
			withID(call("edit_file", map[string]any{"path": "more.go", "old_text": "package greet", "new_text": "package greet\n\nconst More = 1"}), "call_d"),
		}},
		{Text: "edited"},
	}})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	e := newFakeEditor(c, true)
	c.initialize(map[string]string{"sample": sample}, nil)
	greet := filepath.Join(sample, "greet.go")
	e.open(greet)
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "Document greet.go"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	results := toolResults(srv)
	for _, id := range []string{"call_a", "call_b", "call_c", "call_d"} {
		if strings.HasPrefix(results[id], "error") {
			t.Errorf("%s: %s", id, results[id])
		}
	}
	buf := e.buffer(greet)
	if !strings.Contains(buf, "// Greet says hello.\nfunc Greet") || !strings.HasPrefix(buf, "// Package sample greets.\npackage sample") {
		t.Fatalf("greet.go buffer:\n%s\nall: %v\napplied %v", buf, e.text, e.applied)
	}
	if more := e.buffer(filepath.Join(sample, "more.go")); more != "package greet\n\nconst More = 1\n" {
		t.Fatalf("more.go's buffer: %q", more)
	}
}

// An edit the user changed in the review reaches the model as not what it wrote.
func TestEditChangedByTheUserIsReported(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{withID(call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "}), "call_edit")}},
		{Text: "edited"},
	}})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	e := newFakeEditor(c, true)
	e.onApply = func(path, text string) string { return strings.Replace(text, "Hi, ", "Hey there, ", 1) }
	c.initialize(map[string]string{"sample": sample}, nil)
	e.open(filepath.Join(sample, "greet.go"))
	var res runResult
	c.command("agent.run", map[string]any{"prompt": "Say hi"}, &res)
	got := toolResults(srv)["call_edit"]
	if !strings.Contains(got, "applied with changes by the user at lines 4-4") || !strings.Contains(got, "Read the file again") {
		t.Fatalf("the model was told: %s", got)
	}
}

// Two runs of one window in review mode share the confirmation queue: one
// edit is on screen at a time, every edit reaches the user (none refused
// because another is shown), and a shown edit says how many wait behind it
// whenever some do.
func TestReviewQueueIsSharedByRuns(t *testing.T) {
	conv := func(match string) scripted.Conversation {
		var calls []scripted.ToolCall
		for _, f := range []string{"a", "b", "c"} {
			calls = append(calls, call("create_file", map[string]any{"path": match + "-" + f + ".txt", "content": f}))
		}
		return scripted.Conversation{Match: match, Turns: []scripted.Turn{{ToolCalls: calls}, {Text: "created"}}}
	}
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{conv("one"), conv("two")}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{"edits": "review"})
	var mu sync.Mutex
	outstanding, most, shown := 0, 0, 0
	var positions []string
	c.applyResult = func(params json.RawMessage) any {
		var p struct {
			Edit struct {
				ChangeAnnotations map[string]struct{ Description string } `json:"changeAnnotations"`
			} `json:"edit"`
		}
		json.Unmarshal(params, &p)
		mu.Lock()
		outstanding++
		shown++
		most = max(most, outstanding)
		for _, a := range p.Edit.ChangeAnnotations {
			if i := strings.Index(a.Description, "(1 of "); i >= 0 {
				positions = append(positions, a.Description[i:])
			}
		}
		mu.Unlock()
		time.Sleep(30 * time.Millisecond) // the user reads the diff; other edits arrive meanwhile
		mu.Lock()
		outstanding--
		mu.Unlock()
		return map[string]any{"applied": true}
	}
	var wg sync.WaitGroup
	for _, prompt := range []string{"one", "two"} {
		wg.Go(func() {
			var res runResult
			if err := c.command("agent.run", map[string]any{"prompt": prompt}, &res); err != nil || res.Status != "done" || res.Edits != 3 {
				t.Errorf("%s: %+v %v", prompt, res, err)
			}
		})
	}
	wg.Wait()
	if most != 1 || shown != 6 {
		t.Fatalf("%d of 6 edits shown, %d at once (want 1)", shown, most)
	}
	for _, p := range positions {
		if !regexp.MustCompile(`^\(1 of [2-6]\)$`).MatchString(p) {
			t.Errorf("queue position %q", p)
		}
	}
}
