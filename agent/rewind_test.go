//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
)

// TestHostileRewindPaths replays testdata/hostile/rewind-escapes.json:
// a history whose file paths leave the project (.., absolute, through a
// symlink) is refused by name and writes nothing outside.
func TestHostileRewindPaths(t *testing.T) {
	h := newHarness(t, scripted.Script{}, Config{})
	ctx := context.Background()
	root := h.roots["sample"]
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../testdata/hostile/rewind-escapes.json")
	if err != nil {
		t.Fatal(err)
	}
	var fixture struct {
		Files []struct{ Rel string } `json:"files"`
	}
	if err := json.Unmarshal(raw, &fixture); err != nil {
		t.Fatal(err)
	}
	hist := store.NewHistory(h.store)
	if err := hist.PutBlob(ctx, "s-hostile", tools.Hash("planted\n"), []byte("planted\n"), ""); err != nil {
		t.Fatal(err)
	}
	if err := h.store.PutSession(ctx, store.Session{ID: "s-hostile", Project: "sample", Root: root, Status: store.StatusDone}); err != nil {
		t.Fatal(err)
	}
	for i, f := range fixture.Files {
		cp := Checkpoint{N: i + 1, Prompt: "p", Message: "m", Files: []FileChange{{Root: root, Rel: f.Rel, Before: tools.Hash("planted\n"), After: tools.Hash("x")}}}
		body, _ := json.Marshal(cp)
		if err := hist.PutEntry(ctx, "s-hostile", i+1, body, ""); err != nil {
			t.Fatal(err)
		}
		_, err := h.rt.PlanRewind(ctx, "s-hostile", i+1)
		if err == nil || !strings.Contains(err.Error(), f.Rel) {
			t.Errorf("rewinding a change of %q: %v, want a refusal naming it", f.Rel, err)
		}
		hist.DropEntries(ctx, "s-hostile", i+1, "b", []byte(`{}`), "") // the next entry alone
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("written outside the project: %v", entries)
	}
}
