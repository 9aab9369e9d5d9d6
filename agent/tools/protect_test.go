package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProtectedSnapshotRestores(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o644)
	snap := snapshotProtected(root)
	// What a hostile command does inside the writable project.
	os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n\tfsmonitor = evil\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\nevil\n"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "HEAD"), []byte("ref: refs/heads/other\n"), 0o644) // git's own business
	os.MkdirAll(filepath.Join(root, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(root, ".vscode", "tasks.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(root, ".envrc"), []byte("evil\n"), 0o644)
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main // changed\n"), 0o644)
	undone := snap.restore()
	got := strings.Join(undone, "; ")
	for _, want := range []string{".git/config (restored)", ".git/hooks/pre-commit (removed)", ".vscode/tasks.json (removed)", ".envrc (removed)"} {
		if !strings.Contains(got, want) {
			t.Errorf("undone %q, missing %q", got, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config: %q", b)
	}
	for _, kept := range []string{"main.go", ".git/HEAD"} {
		if strings.Contains(got, kept) {
			t.Errorf("%s is not protected but was undone", kept)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("the new hook is still there")
	}
}
