package graph_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
)

// A session interrupted under an earlier binary resumes from a store file
// of format 3 (testdata/store/format3.db): its finished task's writes are
// applied, its unfinished task runs, and the input a binary before 0.2
// queued (in that binary's encoding of pending writes, which the store
// rewrote when it converted the file: the kernel decodes only its own) is
// applied once.
func TestResumeFromAnOlderStore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "store", "format3.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sessions.db")
	os.WriteFile(path, data, 0o600)
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := NewSchema()
	msgs := message.NewChannel(s, "messages")
	NewValue[string](s, "project")
	NewValue[string](s, "summary")
	ran := 0
	g, err := New(s).
		Node("agent", func(ctx context.Context, st State) (Patch, error) {
			return NewPatch(msgs.Append(message.NewAI("answered"))), nil
		}).
		Node("tools", func(ctx context.Context, st State) (Patch, error) {
			ran++
			return NewPatch(msgs.Append(message.NewTool("call", "tool ran"))), nil
		}).
		Edge(Start, "agent").Edge("agent", End).Edge("tools", End).Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Resume(context.Background(), Config{Thread: "s-format3", Checkpointer: db})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("resume: %s %v", res.Status, err)
	}
	var ids, contents []string
	for _, m := range msgs.Get(res.State) {
		ids = append(ids, m.ID)
		contents = append(contents, m.Content)
	}
	if ran != 1 || !slices.Contains(ids, "m4") || slices.Index(ids, "m5") < 0 || !slices.Contains(contents, "and also") || !slices.Contains(contents, "answered") {
		t.Fatalf("ran %d; messages %v %q", ran, ids, contents)
	}
	if n := len(slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id != "m5" })); n != 1 {
		t.Fatalf("the queued input was applied %d times", n)
	}
}
