//go:build unix

package tools

import (
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
)

// What git, the shell and coreutils print when a read-only mount refuses
// them names the path the model is told about.
func TestRefusedPaths(t *testing.T) {
	ro := []string{".git", "sub/.git", ".vscode", "AGENTS.md"}
	out := strings.Join([]string{
		"fatal: Unable to create '/p/.git/index.lock': Read-only file system",
		"error: could not lock config file .git/config: Read-only file system",
		"sh: 1: cannot create sub/.git/hooks/pre-commit: Read-only file system",
		"touch: cannot touch 'AGENTS.md': Read-only file system",
		"mv: cannot move '.vscode' to 'x': Device or resource busy",
		"touch: cannot touch 'elsewhere/x': Read-only file system",
		"cp: cannot create regular file '/p/.git/x': Permission denied",
	}, "\n")
	got := refusedPaths(out, "/p", ro)
	want := []string{".git/index.lock", ".git/config", "sub/.git/hooks/pre-commit", "AGENTS.md", ".vscode"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q", got, want)
	}
	if n := readOnlyNote([]string{"AGENTS.md", "sub/.git/hooks/x"}, "/p"); !strings.Contains(n, "--sandbox-write /p/sub/.git") {
		t.Errorf("a nested repository: %s", n)
	}
	note := readOnlyNote(got[:1], "/p")
	for _, w := range []string{".git/index.lock", "--sandbox-write /p/.git", "sandbox off", "ask the user to run it"} {
		if !strings.Contains(note, w) {
			t.Errorf("%q missing from %s", w, note)
		}
	}
}

func TestOutcomeNote(t *testing.T) {
	n := outcomeNote(sandbox.Outcome{Undone: []string{".envrc (removed)"}, Pending: []string{".git/config"}, NewRepos: []string{"sub/.git"}})
	for _, w := range []string{".envrc (removed)", "undone when the commands running now", "sub/.git", "read-only"} {
		if !strings.Contains(n, w) {
			t.Errorf("%q missing from %s", w, n)
		}
	}
	if outcomeNote(sandbox.Outcome{}) != "" {
		t.Error("a note for nothing")
	}
}
