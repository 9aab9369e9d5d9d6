//go:build unix

package agent

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// stallingEditor applies edits as the headless client does, then (or,
// with before, instead) signals crashed and blocks until released: the
// moment a crash stops the process, frozen.
type stallingEditor struct {
	*diskEditor
	before  bool
	crashed chan struct{}
	release chan struct{}
}

func (e *stallingEditor) Edit(ctx context.Context, fe tools.FileEdit) (tools.EditResult, error) {
	var res tools.EditResult
	var err error
	if !e.before {
		res, err = e.diskEditor.Edit(ctx, fe)
	}
	select {
	case e.crashed <- struct{}{}:
	default:
	}
	<-e.release
	return res, err
}

// crashCopy copies the store file as a crash at this moment leaves it: the
// run is stopped inside a tool, after its intent's commit, with no write
// in flight.
func crashCopy(t *testing.T, path string) string {
	t.Helper()
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(t.TempDir(), "after-crash.db")
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	return dst
}

// crashAndResume runs script in a session on a bbolt store of durability
// d, crashes it (crashCopy) once crashed fires (or the file log has a
// line, for commands), lets prepare change the workspace, then resumes the
// session from the copy in a new runtime and returns the resumed run's
// result and stored messages.
func crashAndResume(t *testing.T, d store.Durability, script scripted.Script, ed *stallingEditor, prepare func(h *harness)) (*harness, Result, []message.Message) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := store.Open(path, store.WithDefaultDurability(d))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, script, Config{Store: db})
	ed.diskEditor = h.editor
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const session = "s-crash"
	go h.reg.Run(ctx, h.rt, Request{NewID: session, Prompt: "work", Editor: ed, Permissions: allowAll(true)})
	log := filepath.Join(h.roots["sample"], "log.txt")
	deadline := time.After(time.Minute)
	for stalled := false; !stalled; {
		select {
		case <-ed.crashed:
			stalled = true
		case <-deadline:
			t.Fatal("the run never reached the point of the crash")
		case <-time.After(10 * time.Millisecond):
			if b, _ := os.ReadFile(log); strings.Contains(string(b), "\n") {
				stalled = true
				time.Sleep(100 * time.Millisecond) // the command's output reaches its spool
			}
		}
	}
	copied := crashCopy(t, path)
	defer func() { cancel(); close(ed.release) }()
	if prepare != nil {
		prepare(h)
	}
	db2, err := store.Open(copied)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	sessions, _ := db2.Sessions(context.Background(), "")
	if len(sessions) != 1 || sessions[0].ID != session {
		t.Fatalf("stored sessions after the crash: %+v", sessions)
	}
	// A new process: a workspace of its own (the stalled run holds the
	// old one's edit locks).
	h2 := &harness{t: t, srv: h.srv, ws: workspace.New(workspace.UTF16), roots: h.roots, store: db2,
		reg: NewRegistry()} // a new process: its own registry of running sessions
	for name, root := range h.roots {
		if _, err := h2.ws.Add(name, root); err != nil {
			t.Fatal(err)
		}
	}
	h2.editor = &diskEditor{ws: h2.ws}
	cfg := h.rt.cfg
	cfg.Workspace = h2.ws
	cfg.Store = db2
	if h2.rt, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	res, err := h2.reg.Resume(context.Background(), h2.rt, Request{Session: session, Editor: h2.editor, Permissions: allowAll(true)})
	if err != nil {
		t.Fatal(err)
	}
	return h2, res, storedMessages(t, db2, session, "")
}

// toolAnswer returns the content of the tool message answering callID.
func toolAnswer(t *testing.T, msgs []message.Message, callID string) string {
	t.Helper()
	var found []string
	for _, m := range msgs {
		if m.Role == message.Tool && m.ToolCallID == callID {
			found = append(found, m.Content)
		}
	}
	if len(found) != 1 {
		t.Fatalf("call %s has %d answers: %q", callID, len(found), found)
	}
	return found[0]
}

func editScript() scripted.Script {
	tc := call("edit_file", map[string]any{"path": "greet.go", "old_text": `"Hello, " + name`, "new_text": `"Hello, " + name + "!"`})
	tc.ID = "call_edit"
	return scripted.Script{ByHistory: true, Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{tc}}, {Text: "done"}}}
}

// An edit made before the crash is recorded as made on resume, not made
// again; one whose intent was recorded but that was not made is made then;
// one whose file changed meanwhile is told to the model, with where its
// text is now. In every durability mode (exit too: the intent writes the
// run's steps, so the run is resumable).
func TestResumeSettlesAnInterruptedEdit(t *testing.T) {
	for _, d := range []store.Durability{store.Sync, store.Batched, store.Exit} {
		for _, tc := range []struct {
			name   string
			before bool
			change string // what the user writes into greet.go before the resume
			want   string
		}{
			{"made", false, "", "it was not made again"},
			{"not made", true, "", "edited greet.go"},
			{"changed", true, "// a line the user added\n", "has changed since the edit was computed, so it was not made again; the text it replaces is at lines 5-5 now"},
		} {
			t.Run(string(d)+"/"+tc.name, func(t *testing.T) {
				ed := &stallingEditor{before: tc.before, crashed: make(chan struct{}, 1), release: make(chan struct{})}
				var greet string
				_, res, msgs := crashAndResume(t, d, editScript(), ed, func(h *harness) {
					greet = filepath.Join(h.roots["sample"], "greet.go")
					if tc.change != "" {
						b, _ := os.ReadFile(greet)
						tc.change += string(b)
						os.WriteFile(greet, []byte(tc.change), 0o644)
					}
				})
				if res.Status != "done" {
					t.Fatalf("resume: %+v", res)
				}
				answer := toolAnswer(t, msgs, "call_edit")
				if !strings.Contains(answer, tc.want) {
					t.Fatalf("the edit's answer: %q, want %q", answer, tc.want)
				}
				b, _ := os.ReadFile(greet)
				n := strings.Count(string(b), `"Hello, " + name + "!"`)
				switch {
				case tc.change != "" && string(b) != tc.change:
					t.Fatalf("the user's file was changed by the resume:\n%s", b)
				case tc.change == "" && n != 1:
					t.Fatalf("the edit is in the file %d times:\n%s", n, b)
				}
			})
		}
	}
}

// A command interrupted by a crash is never run again: the resumed run
// tells the model it was interrupted, when it started, that its outcome is
// unknown, and what it printed before the crash (its spool).
func TestResumeNeverRerunsACommand(t *testing.T) {
	tc := call("run_command", map[string]any{"command": "echo started-once; echo ran >> log.txt; sleep 60"})
	tc.ID = "call_cmd"
	script := scripted.Script{ByHistory: true, Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{tc}}, {Text: "done"}}}
	ed := &stallingEditor{crashed: make(chan struct{}, 1), release: make(chan struct{})}
	h, res, msgs := crashAndResume(t, store.Batched, script, ed, nil)
	if res.Status != "done" {
		t.Fatalf("resume: %+v", res)
	}
	answer := toolAnswer(t, msgs, "call_cmd")
	for _, want := range []string{"interrupted while running `echo started-once", "outcome unknown: check before repeating", "started-once"} {
		if !strings.Contains(answer, want) {
			t.Fatalf("the command's answer %q lacks %q", answer, want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(h.roots["sample"], "log.txt"))
	if strings.Count(string(b), "ran") != 1 {
		t.Fatalf("log.txt after the resume: %q (the command ran again)", b)
	}
}

// noIntents is a store without intents and spools (the memory store's
// way): what a run costs without them.
type noIntents struct{ store.Store }

// BenchmarkSideEffectRun is a 120-call run of edits and appending commands
// on a bbolt store (batched), with intents and without (the same store
// with its Intents hidden), interleaved: ms/run of each and their ratio.
func BenchmarkSideEffectRun(b *testing.B) {
	const calls = 120
	turns := make([]scripted.Turn, 0, calls+1)
	for i := range calls {
		tc := call("run_command", map[string]any{"command": fmt.Sprintf("echo %d >> log.txt", i)})
		if i%2 == 0 {
			tc = call("edit_file", map[string]any{"path": "edits.txt", "old_text": fmt.Sprintf("anchor %d\n", i), "new_text": fmt.Sprintf("anchor %d\nline %d\n", i, i)})
		}
		tc.ID = fmt.Sprintf("call_%03d", i)
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{tc}})
	}
	turns = append(turns, scripted.Turn{Text: "done"})
	run := func(intents bool) time.Duration {
		path := filepath.Join(b.TempDir(), "s.db")
		db, err := store.Open(path, store.WithDefaultDurability(store.Batched))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		var st store.Store = db
		if !intents {
			st = noIntents{db}
		}
		h := newHarness(b, scripted.Script{Turns: turns, ByHistory: true}, Config{Store: st, MaxSteps: 3 * calls})
		var anchors strings.Builder
		for i := 0; i < calls; i += 2 {
			fmt.Fprintf(&anchors, "anchor %d\n", i)
		}
		os.WriteFile(filepath.Join(h.roots["sample"], "edits.txt"), []byte(anchors.String()), 0o644)
		start := time.Now()
		res, err := h.reg.Run(context.Background(), h.rt, Request{Prompt: "work", Editor: h.editor, Permissions: allowAll(true)})
		elapsed := time.Since(start)
		if err != nil || res.Status != "done" || res.Edits != calls/2 {
			b.Fatalf("run: %+v %v", res, err)
		}
		return elapsed
	}
	var with, without time.Duration
	for b.Loop() {
		with += run(true)
		without += run(false)
	}
	b.ReportMetric(float64(with.Milliseconds())/float64(b.N), "ms/run-intents")
	b.ReportMetric(float64(without.Milliseconds())/float64(b.N), "ms/run-none")
	b.ReportMetric(float64(with)/float64(without), "intents/none")
}
