//go:build unix

package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// linkedRepo copies the hostile repository testdata/hostile/linked-repo
// (folders and files linked into .git and .vscode, a dangling link into
// .git/hooks) and adds what git cannot hold: the .git folder, and
// hardlinked.txt, a second hard link of .git/config.
func linkedRepo(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "testdata", "hostile", "linked-repo"))); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
	if err := os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, ".git", "config"), filepath.Join(root, "hardlinked.txt")); err != nil {
		t.Fatal(err)
	}
	return root
}

// linkedCalls are the calls of linked-into-protected.json that reach a
// protected file by another name: the path each gives, and what the
// confirmation must say.
var linkedCalls = map[string]struct{ path, says string }{
	"call_commondir":   {"docs/meta/commondir", "docs/meta/commondir is .git/commondir through a symlink: git's own files"},
	"call_meta_config": {"docs/meta/config", "docs/meta/config is .git/config through a symlink"},
	"call_tasks":       {"docs/editor/tasks.json", "docs/editor/tasks.json is .vscode/tasks.json through a symlink: VS Code"},
	"call_settings":    {"docs/editor/settings.json", "docs/editor/settings.json is .vscode/settings.json through a symlink"},
	"call_notes":       {"notes.txt", "notes.txt is .git/config through a symlink"},
	"call_hardlink":    {"hardlinked.txt", "hardlinked.txt has 2 hard links"},
}

// checkLinkedRepoUnchanged fails when anything the hostile model aimed at
// changed: .git's files, a new hook, a new VS Code task.
func checkLinkedRepoUnchanged(t *testing.T, root string) {
	t.Helper()
	if b, _ := os.ReadFile(filepath.Join(root, ".git", "config")); string(b) != "[core]\n\tbare = false\n" {
		t.Errorf(".git/config changed: %q", b)
	}
	for _, f := range []string{".git/commondir", ".git/hooks/pre-commit", ".vscode/tasks.json"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".vscode", "settings.json")); string(b) != "{}\n" {
		t.Errorf(".vscode/settings.json changed: %q", b)
	}
}

// confirmations reads the applyEdit requests a client got: for each file
// (relative to root), the confirmation's description, "" for an edit that
// asked none.
func confirmations(t *testing.T, edits []json.RawMessage, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, raw := range edits {
		var e struct {
			Edit struct {
				DocumentChanges []struct {
					TextDocument struct{ URI string }
				}
				ChangeAnnotations map[string]struct {
					NeedsConfirmation bool
					Description       string
				}
			}
		}
		if err := json.Unmarshal(raw, &e); err != nil || len(e.Edit.DocumentChanges) == 0 {
			t.Fatalf("applyEdit %s: %v", raw, err)
		}
		u := e.Edit.DocumentChanges[len(e.Edit.DocumentChanges)-1].TextDocument.URI
		name := strings.TrimPrefix(u, "file://"+root+"/")
		out[name] = ""
		for _, a := range e.Edit.ChangeAnnotations {
			if a.NeedsConfirmation {
				out[name] = a.Description
			}
		}
	}
	return out
}

// Through a folder linked into .git or .vscode, a link to .git/config, or a
// hard link of it, every edit carries needsConfirmation and says which file
// it really changes; a dangling link into .git/hooks is refused before the
// editor sees it. The ordinary file beside them needs no confirmation.
func TestHostileLinkedIntoProtected(t *testing.T) {
	srv := model(t, hostile(t, "linked-into-protected.json"))
	root := linkedRepo(t)
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"repo": root}, nil)
	c.applyResult = func(p json.RawMessage) any {
		if strings.Contains(string(p), `"needsConfirmation":true`) {
			return map[string]any{"applied": false, "failureReason": "rejected in review"}
		}
		return map[string]any{"applied": true}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "tidy the docs"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	got := confirmations(t, c.edits(), root)
	for id, want := range linkedCalls {
		if why, ok := got[want.path]; !ok || !strings.Contains(why, want.says) {
			t.Errorf("%s (%s): confirmation %q (sent %v), want it to say %q", id, want.path, why, ok, want.says)
		}
	}
	if why, ok := got["docs/plain.md"]; !ok || why != "" {
		t.Errorf("the ordinary file: sent %v, confirmation %q", ok, why)
	}
	if _, ok := got["docs/hook"]; ok || len(got) != len(linkedCalls)+1 {
		t.Errorf("edits sent: %v", got)
	}
	if r := toolResult(srv.Requests(), "call_hook"); !strings.Contains(r, "dangling") {
		t.Errorf("the model was told %q for the dangling link", r)
	}
	checkLinkedRepoUnchanged(t, root)
}

// newProtected are the entries issue 40 added to workspace.ProtectedPaths:
// new-protected-entries.json creates a file of each.
var newProtected = []string{".zed/**", "*.code-workspace", ".gitea/workflows/**", ".forgejo/workflows/**",
	".github/actions/**", "lefthook.*", ".lefthook.*", "lefthook-local.*", ".lefthook-local.*", ".lefthook/**",
	".lefthook-local/**", "mise.toml", ".mise.toml", "mise.*.toml", ".mise.*.toml", "mise/config*.toml", ".mise/**",
	".config/mise/**", ".gitattributes", ".helix/**", ".agents/**", ".github/prompts/**", ".github/copilot-instructions.md"}

// newProtectedCalls reads new-protected-entries.json: the path of each
// create_file call by ID, all protected but the ordinary call_plain, and
// checks that they cover every entry of newProtected.
func newProtectedCalls(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	covered := map[string]bool{}
	for _, tc := range hostile(t, "new-protected-entries.json").Turns[0].ToolCalls {
		var a struct{ Path string }
		json.Unmarshal(tc.Args, &a)
		out[tc.ID] = a.Path
		r, ok := workspace.Match(workspace.ProtectedPaths, a.Path)
		if ok == (tc.ID == "call_plain") {
			t.Fatalf("%s: %s protected %v", tc.ID, a.Path, ok)
		}
		covered[r.Pattern] = true
	}
	for _, p := range newProtected {
		if !covered[p] {
			t.Errorf("new-protected-entries.json creates no file of %q", p)
		}
	}
	return out
}

// Creating a file of each protected entry added in issue 40 asks for
// confirmation in apply mode; the ordinary file does not.
func TestHostileNewProtectedEntries(t *testing.T) {
	calls := newProtectedCalls(t)
	srv := model(t, hostile(t, "new-protected-entries.json"))
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": sample}, nil)
	c.applyResult = func(p json.RawMessage) any {
		if strings.Contains(string(p), `"needsConfirmation":true`) {
			return map[string]any{"applied": false, "failureReason": "rejected in review"}
		}
		return map[string]any{"applied": true}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "set things up"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	got := confirmations(t, c.edits(), sample)
	for id, path := range calls {
		why, sent := got[path]
		switch {
		case !sent:
			t.Errorf("%s: %s was never sent to the editor", id, path)
		case id == "call_plain" && why != "":
			t.Errorf("the ordinary file asked: %q", why)
		case id != "call_plain" && !strings.HasPrefix(why, "protected file: "):
			t.Errorf("%s: %s created with confirmation %q", id, path, why)
		}
	}
}

// Over ACP, where agent-lsp writes the files itself: each edit through a
// link into a protected file asks, naming the file it really changes;
// rejected, nothing is written; the dangling link is refused; the ordinary
// file is written without a question.
func TestACPHostileLinkedIntoProtected(t *testing.T) {
	srv := model(t, hostile(t, "linked-into-protected.json"))
	root := linkedRepo(t)
	c := startACP(t, false, envFor(t, srv))
	session := c.newSession(root)
	c.answer = func(acp.RequestPermissionRequest) string { return "reject" }
	res, err := c.prompt(session, "tidy the docs")
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	asked := acpAsked(c)
	for id, want := range linkedCalls {
		if !strings.Contains(asked[id], want.says) {
			t.Errorf("%s (%s): asked %q, want it to say %q", id, want.path, asked[id], want.says)
		}
	}
	if _, ok := asked["call_plain"]; ok || len(asked) != len(linkedCalls) {
		t.Errorf("questions: %v", asked)
	}
	reqs := srv.Requests()
	if r := toolResult(reqs, "call_hook"); !strings.Contains(r, "dangling") {
		t.Errorf("the model was told %q for the dangling link", r)
	}
	if r := toolResult(reqs, "call_commondir"); !strings.Contains(r, "rejected") {
		t.Errorf("the model was told %q for the rejected edit", r)
	}
	if b, err := os.ReadFile(filepath.Join(root, "docs", "plain.md")); err != nil || string(b) != "An ordinary file.\n" {
		t.Errorf("the ordinary file: %q %v", b, err)
	}
	checkLinkedRepoUnchanged(t, root)
}

// acpAsked is what the permission questions a client got said, by tool
// call: the question's text content.
func acpAsked(c *acpClient) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for _, p := range c.asked {
		var text []string
		for _, ct := range p.ToolCall.Content {
			if ct.Content != nil && ct.Content.Content.Text != nil {
				text = append(text, ct.Content.Content.Text.Text)
			}
		}
		out[string(p.ToolCall.ToolCallId)] = strings.Join(text, "\n")
	}
	return out
}

// Over ACP, creating a file of each protected entry added in issue 40 asks,
// and rejected writes nothing; the ordinary file is written unasked.
func TestACPHostileNewProtectedEntries(t *testing.T) {
	calls := newProtectedCalls(t)
	srv := model(t, hostile(t, "new-protected-entries.json"))
	sample := copyFixture(t, "sample")
	c := startACP(t, false, envFor(t, srv))
	session := c.newSession(sample)
	c.answer = func(acp.RequestPermissionRequest) string { return "reject" }
	res, err := c.prompt(session, "set things up")
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	asked := acpAsked(c)
	for id, path := range calls {
		_, err := os.Stat(filepath.Join(sample, path))
		if id == "call_plain" {
			if _, ok := asked[id]; ok || err != nil {
				t.Errorf("the ordinary file: asked %v, written: %v", ok, err)
			}
			continue
		}
		if !strings.HasPrefix(asked[id], "protected file: ") {
			t.Errorf("%s: %s asked %q", id, path, asked[id])
		}
		if err == nil {
			t.Errorf("%s: %s was written", id, path)
		}
	}
}
