package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestProtectedPaths(t *testing.T) {
	for _, tt := range []struct {
		rel       string
		protected bool
	}{
		{".git/config", true},
		{".git/hooks/pre-commit", true},
		{"sub/.git/config", true},
		{".GIT/config", true}, // case-insensitive file systems
		{".git", true},
		{".gitignore", false},
		{".vscode/settings.json", true},
		{".vscode", false}, // the folder itself is not an edit target
		{".env", true},
		{".env.local", true},
		{"config/.env.production", true},
		{"environment.go", false},
		{".envrc", true},
		{".github/workflows/ci.yml", true},
		{".github/CODEOWNERS", false},
		{"AGENTS.md", true},
		{"docs/CLAUDE.md", true},
		{"README.md", false},
		{".mcp.json", true},
		{"src/main.go", false},
		{"./.git/config", true},
	} {
		_, got := Match(ProtectedPaths, tt.rel)
		if got != tt.protected {
			t.Errorf("%s: protected %v, want %v", tt.rel, got, tt.protected)
		}
	}
	for _, tt := range []struct {
		rel   string
		build bool
	}{
		{"package.json", true}, {"web/package.json", true}, {"Makefile", true}, {"go.mod", true},
		{".cargo/config.toml", true}, {"conftest.py", true}, {"main.go", false}, {"package-lock.json", false},
	} {
		if _, got := Match(CommandFiles, tt.rel); got != tt.build {
			t.Errorf("%s: defines commands %v, want %v", tt.rel, got, tt.build)
		}
	}
}

func TestMatchFileFollowsSymlinks(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n"), 0o644)
	os.Symlink(filepath.Join(".git", "config"), filepath.Join(root, "notes.txt"))
	ws := New(UTF16)
	p, err := ws.Add("p", root)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := p.MatchFile(ProtectedPaths, filepath.Join(root, "notes.txt")); !ok || r.Pattern != ".git/**" {
		t.Fatalf("a link to .git/config: %v %v", r, ok)
	}
	if _, ok := p.MatchFile(ProtectedPaths, filepath.Join(root, "new.txt")); ok {
		t.Fatal("a new file is not protected")
	}
}
