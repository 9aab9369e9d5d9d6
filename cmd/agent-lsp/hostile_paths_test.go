//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// linkedRepoCLI is a headless run of linked-into-protected.json on a copy of
// the hostile repository testdata/hostile/linked-repo, given what git cannot
// hold: its .git folder, and hardlinked.txt, a second hard link of
// .git/config.
func linkedRepoCLI(t *testing.T) *cli {
	c := hostileCLI(t, "linked-into-protected.json", "sample")
	c.workspace = filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(c.workspace, os.DirFS("../../testdata/hostile/linked-repo")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(c.workspace, ".git", "hooks"), 0o755)
	if err := os.WriteFile(filepath.Join(c.workspace, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(c.workspace, ".git", "config"), filepath.Join(c.workspace, "hardlinked.txt")); err != nil {
		t.Fatal(err)
	}
	return c
}

// resultFor is what the model was told for tool call id.
func resultFor(reqs []openai.ChatCompletionRequest, id string) string {
	for _, r := range reqs {
		for _, m := range r.Messages {
			if m.ToolCallID == id {
				return m.Content
			}
		}
	}
	return ""
}

// A headless run cannot ask: every edit through a folder linked into .git or
// .vscode, a link to .git/config or a hard link of it is refused, naming the
// file it really changes; the dangling link into .git/hooks is refused.
// --allow-edit '**' lets the edits by symlink through (they name protected
// files), never those of a file with hard links.
func TestHeadlessLinkedIntoProtected(t *testing.T) {
	hardLinked := map[string]bool{"call_meta_config": true, "call_notes": true, "call_hardlink": true} // all .git/config, 2 links
	for _, allowAll := range []bool{false, true} {
		c := linkedRepoCLI(t)
		args := []string{"run", "--json"}
		if allowAll {
			args = append(args, "--allow-edit", "**")
		}
		out, _, code := c.run(t, "", append(args, "tidy the docs")...)
		evs, res := jsonLines(t, out)
		if code != 0 || res["status"] != "done" {
			t.Fatalf("exit %d %v", code, res)
		}
		ends := toolEnds(evs)
		for _, id := range []string{"call_commondir", "call_meta_config", "call_tasks", "call_settings", "call_notes", "call_hardlink", "call_hook"} {
			applied := ends[id]["ok"] == true
			if want := allowAll && !hardLinked[id] && id != "call_hook"; applied != want {
				t.Errorf("--allow-edit ** %v: %s applied %v, want %v: %v", allowAll, id, applied, want, ends[id])
			}
		}
		if ends["call_plain"]["ok"] != true {
			t.Errorf("the ordinary file was not created: %v", ends["call_plain"])
		}
		reqs := c.srv.Requests()
		told := map[string]string{"call_hook": "dangling", "call_hardlink": "hardlinked.txt has 2 hard links", "call_notes": "notes.txt has 2 hard links"}
		if !allowAll {
			told["call_notes"] = "notes.txt is .git/config through a symlink"
			told["call_commondir"] = "docs/meta/commondir is .git/commondir through a symlink"
		}
		for id, says := range told {
			if got := resultFor(reqs, id); !strings.Contains(got, says) || (id != "call_hook" && !strings.Contains(got, "--allow-edit")) {
				t.Errorf("%s: the model was told %q, want %q", id, got, says)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(c.workspace, ".git", "config")); string(b) != "[core]\n" {
			t.Errorf(".git/config changed: %q", b)
		}
		if _, err := os.Stat(filepath.Join(c.workspace, ".git", "hooks", "pre-commit")); err == nil {
			t.Error("the hook was created through the dangling link")
		}
		for _, f := range []string{".git/commondir", ".vscode/tasks.json"} {
			if _, err := os.Stat(filepath.Join(c.workspace, f)); (err == nil) != allowAll {
				t.Errorf("--allow-edit ** %v: %s written: %v", allowAll, f, err == nil)
			}
		}
	}
}

// A headless run refuses to create a file of each protected entry added in
// issue 40, and creates the ordinary file beside them.
func TestHeadlessNewProtectedEntries(t *testing.T) {
	s, err := scripted.Load("../../testdata/hostile/new-protected-entries.json")
	if err != nil {
		t.Fatal(err)
	}
	c := hostileCLI(t, "new-protected-entries.json", "sample")
	out, _, code := c.run(t, "", "run", "--json", "set things up")
	evs, res := jsonLines(t, out)
	if code != 0 || res["status"] != "done" {
		t.Fatalf("exit %d %v", code, res)
	}
	ends := toolEnds(evs)
	for _, tc := range s.Turns[0].ToolCalls {
		var a struct{ Path string }
		json.Unmarshal(tc.Args, &a)
		protected := tc.ID != "call_plain" // every other call creates a protected file
		if _, ok := workspace.Match(workspace.ProtectedPaths, a.Path); ok != protected {
			t.Fatalf("%s: %s protected %v in the table", tc.ID, a.Path, ok)
		}
		_, err := os.Stat(filepath.Join(c.workspace, a.Path))
		if applied := ends[tc.ID]["ok"] == true; applied == protected || (err == nil) == protected {
			t.Errorf("%s (protected %v): applied %v, on disk %v", a.Path, protected, applied, err == nil)
		}
	}
}
