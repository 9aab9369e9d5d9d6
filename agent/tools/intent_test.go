//go:build unix

package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Two edits of one file in one task, interrupted: an edit is made when the
// file has its text, or when the task's next edit was begun (its intent
// was computed against the text this one makes); it is to be made now when
// the file still has the text it was computed against; otherwise the model
// is told.
func TestSettleEditsOfOneTask(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "f.txt")
	ws := workspace.New(workspace.UTF16)
	if _, err := ws.Add("p", root); err != nil {
		t.Fatal(err)
	}
	env := &Env{Workspace: ws, Project: "p"}
	a, b, c := "one\n", "one\ntwo\n", "one\ntwo\nthree\n"
	first := Intent{Tool: "edit_file", Path: path, Before: Hash(a), After: Hash(b)}
	second := Intent{Tool: "edit_file", Path: path, Before: Hash(b), After: Hash(c)}
	call := message.ToolCall{Name: "edit_file", Args: `{"path":"f.txt","old_text":"one\n","new_text":"one\ntwo\n"}`}
	for _, tt := range []struct {
		file       string
		begun      bool   // the second edit's intent was recorded
		firstWant  string // "made", "rerun" or an error's words
		secondWant string
	}{
		{c, true, "made", "made"},
		{b, true, "made", "rerun"},
		{b, false, "made", ""},
		{a, false, "rerun", ""},
		{"zero\n", false, "changed since", ""},
		{"zero\n", true, "made", "changed since"}, // the second was computed against the first's text
	} {
		os.WriteFile(path, []byte(tt.file), 0o644)
		settle := func(in Intent, later []Intent, want string) {
			res, rerun := All().Settle(context.Background(), env, call, in, later)
			got := res.Content
			switch {
			case rerun:
				got = "rerun"
			case strings.Contains(got, "it was not made again)"):
				got = "made"
			}
			if !strings.Contains(got, want) {
				t.Errorf("file %q (second begun: %v), intent %s->%s: %q, want %q", tt.file, tt.begun, in.Before[:4], in.After[:4], got, want)
			}
		}
		if !tt.begun {
			settle(first, nil, tt.firstWant)
			continue
		}
		settle(first, []Intent{second}, tt.firstWant)
		settle(second, nil, tt.secondWant)
	}
}

// A command is never run again: its answer says so, when it started, and
// what its spool caught; without a spool, that nothing was caught.
func TestSettleCommand(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "call.out")
	os.WriteFile(spool, []byte("building...\n"), 0o600)
	started := time.Date(2026, 11, 28, 14, 5, 9, 0, time.Local)
	call := message.ToolCall{Name: "run_command", Args: `{"command":"make"}`}
	res, rerun := All().Settle(context.Background(), &Env{}, call, Intent{Command: "make", Spool: spool, Started: started}, nil)
	if rerun || !res.IsError || !strings.Contains(res.Content, "interrupted while running `make` (started 14:05:09); outcome unknown: check before repeating") ||
		!strings.Contains(res.Content, "building...") {
		t.Fatalf("%v %+v", rerun, res)
	}
	res, _ = All().Settle(context.Background(), &Env{}, call, Intent{Command: "make", Started: started}, nil)
	if !strings.Contains(res.Content, "No output was captured") {
		t.Fatalf("without a spool: %+v", res)
	}
}
