//go:build unix

package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// refusingEditor records the edits it is given and applies none.
type refusingEditor struct {
	mu    sync.Mutex
	edits []FileEdit
}

func (e *refusingEditor) Edit(_ context.Context, fe FileEdit) (EditResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.edits = append(e.edits, fe)
	return EditResult{FailureReason: "refused by the test"}, nil
}

func (e *refusingEditor) Save(context.Context, []string) (SaveResult, error) {
	return SaveResult{}, ErrSaveUnsupported
}

// changedTrust records the projects whose command files changed.
type changedTrust struct{ changed []string }

func (t *changedTrust) Changed(project string) bool { return false }
func (t *changedTrust) Change(project string)       { t.changed = append(t.changed, project) }

// The edit tools decide their path as the kernel resolves it: the editor
// gets the decision (the file a symlinked folder really leads to, hard
// links), a dangling link is refused before the editor sees it, and a link
// to a file that defines the project's commands marks them changed.
func TestEditToolsDecideTheResolvedPath(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(root, "package.json"), []byte("{}\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	os.Symlink("../.git", filepath.Join(root, "docs", "meta"))
	os.Symlink("../.git/hooks/pre-commit", filepath.Join(root, "docs", "hook"))
	os.Symlink("package.json", filepath.Join(root, "pkg"))
	os.WriteFile(filepath.Join(root, "shared.txt"), []byte("one\n"), 0o644)
	os.Link(filepath.Join(root, "shared.txt"), filepath.Join(root, "other-name.txt"))
	ws := workspace.New(workspace.UTF16)
	if _, err := ws.Add("p", root); err != nil {
		t.Fatal(err)
	}
	ed, trust := &refusingEditor{}, &changedTrust{}
	env := &Env{Workspace: ws, Project: "p", Editor: ed, Trust: trust}
	call := func(name, args string) Result { return All().Call(context.Background(), env, callOf(name, args)) }

	call("create_file", `{"path":"docs/meta/commondir","content":"x"}`)
	call("edit_file", `{"path":"shared.txt","old_text":"one","new_text":"two"}`)
	if res := call("create_file", `{"path":"docs/hook","content":"#!/bin/sh\n"}`); !res.IsError || !strings.Contains(res.Content, "dangling") {
		t.Errorf("a create through a dangling link into .git/hooks: %+v", res)
	}
	if len(ed.edits) != 2 {
		t.Fatalf("the editor got %d edits, want 2", len(ed.edits))
	}
	if fe := ed.edits[0]; fe.Path != filepath.Join(root, "docs", "meta", "commondir") || fe.Rel != "docs/meta/commondir" ||
		!strings.Contains(fe.Decision.Review(nil), "docs/meta/commondir is .git/commondir through a symlink") {
		t.Errorf("through docs/meta: %+v, review %q", fe, fe.Decision.Review(nil))
	}
	if fe := ed.edits[1]; !strings.Contains(fe.Decision.Review(nil), "shared.txt has 2 hard links") {
		t.Errorf("a hard-linked file: review %q", fe.Decision.Review(nil))
	}
	if len(trust.changed) != 0 {
		t.Fatalf("command files changed: %v", trust.changed)
	}
	call("edit_file", `{"path":"pkg","old_text":"{}","new_text":"{\"scripts\":{\"test\":\"touch pwned\"}}"}`)
	if len(trust.changed) != 1 || trust.changed[0] != "p" {
		t.Errorf("an edit of package.json through a link did not mark the project's commands changed: %v", trust.changed)
	}
}
