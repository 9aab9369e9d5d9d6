//go:build unix

package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// plainGit runs git as a user would, for the test's own setup and checks.
func plainGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
		"-c", "commit.gpgSign=false", "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo is a repository with one commit holding main.go and sub/a.txt.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	plainGit(t, dir, "init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "a.txt"), []byte("a\n"), 0o644))
	plainGit(t, dir, "add", "-A")
	plainGit(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHostileRepository: a repository whose hooks, fsmonitor, filter
// driver, signing program, pager, editor and aliases run a script
// (testdata/hostile/git-repo) gets a worktree, a commit and the worktree's
// removal from the server, and the script never runs.
func TestHostileRepository(t *testing.T) {
	dir := newRepo(t)
	fixture := filepath.Join("..", "..", "testdata", "hostile", "git-repo")
	tmp := t.TempDir()
	marker := filepath.Join(tmp, "MARKER")
	script, err := os.ReadFile(filepath.Join(fixture, "evil.sh"))
	must(t, err)
	evil := filepath.Join(tmp, "evil.sh")
	must(t, os.WriteFile(evil, []byte(strings.ReplaceAll(string(script), "@MARKER@", marker)), 0o755))
	hooks := filepath.Join(tmp, "hooks")
	must(t, os.MkdirAll(hooks, 0o755))
	for _, h := range []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc"} {
		must(t, os.Symlink(evil, filepath.Join(hooks, h)))
		must(t, os.Symlink(evil, filepath.Join(dir, ".git", "hooks", h)))
	}
	attrs, err := os.ReadFile(filepath.Join(fixture, "gitattributes"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, ".gitattributes"), attrs, 0o644))
	plainGit(t, dir, "add", ".gitattributes")
	plainGit(t, dir, "commit", "-q", "-m", "attributes")
	cfg, err := os.ReadFile(filepath.Join(fixture, "config"))
	must(t, err)
	text := strings.NewReplacer("@EVIL@", evil, "@HOOKS@", hooks).Replace(string(cfg))
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(text)
	must(t, err)
	must(t, f.Close())
	// The fixture is armed: a plain git command runs the script.
	cmd := exec.Command("git", "-C", dir, "status")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	_ = cmd.Run()
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the fixture's fsmonitor did not run for a plain git status: %v", err)
	}
	must(t, os.Remove(marker))

	ctx := context.Background()
	w, err := Create(ctx, dir, filepath.Join(tmp, "state"), "agent-lsp/t", false)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(w.Root, "main.go"), []byte("package main // changed\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(w.Root, "new.txt"), []byte("new\n"), 0o644))
	out, err := w.Finish(ctx, "agent-lsp: the test's run")
	must(t, err)
	if !out.Changed || out.Left != "" {
		t.Fatalf("outcome %+v", out)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the repository's script ran during the server's git calls:\n%s", b)
	}
	if got := plainGit(t, dir, "-c", "core.fsmonitor=false", "show", "--no-ext-diff", "--format=", "--name-only", w.Branch); got != "main.go\nnew.txt" {
		t.Fatalf("the branch's commit changed %q", got)
	}
}

// TestWorktreeOfASubfolder: a project that is a subfolder of its
// repository works in the same subfolder of the worktree; the main tree is
// untouched and its uncommitted changes are not in the worktree.
func TestWorktreeOfASubfolder(t *testing.T) {
	dir := newRepo(t)
	must(t, os.WriteFile(filepath.Join(dir, "sub", "a.txt"), []byte("uncommitted\n"), 0o644))
	ctx := context.Background()
	state := t.TempDir()
	w, err := Create(ctx, filepath.Join(dir, "sub"), state, "agent-lsp/s", false)
	must(t, err)
	if w.Root != filepath.Join(w.Dir, "sub") || !strings.HasPrefix(w.Dir, state) {
		t.Fatalf("worktree %+v", w)
	}
	b, err := os.ReadFile(filepath.Join(w.Root, "a.txt"))
	must(t, err)
	if string(b) != "a\n" {
		t.Fatalf("the worktree has %q: the main tree's uncommitted text", b)
	}
	must(t, os.Remove(filepath.Join(w.Root, "a.txt")))
	out, err := w.Finish(ctx, "remove a")
	must(t, err)
	if _, err := os.Stat(w.Dir); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there: %v", err)
	}
	if got := plainGit(t, dir, "show", "--format=%s", "--name-status", out.Branch); got != "remove a\n\nD\tsub/a.txt" {
		t.Fatalf("branch %s: %q", out.Branch, got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "a.txt")); string(b) != "uncommitted\n" {
		t.Fatalf("the main tree changed: %q", b)
	}
	if Left(state) != nil {
		t.Fatalf("left: %v", Left(state))
	}
}

// TestParallelWorktrees: worktrees of one repository made, changed and
// finished at once each get their own branch and commit (the calls of one
// repository are serialized), and an unchanged one keeps its base.
func TestParallelWorktrees(t *testing.T) {
	dir := newRepo(t)
	state := t.TempDir()
	ctx := context.Background()
	var wg sync.WaitGroup
	outs := make([]Outcome, 6)
	errs := make([]error, 6)
	for i := range outs {
		wg.Go(func() {
			w, err := Create(ctx, dir, state, "agent-lsp/p", false)
			if err != nil {
				errs[i] = err
				return
			}
			if i > 0 {
				_ = os.WriteFile(filepath.Join(w.Root, "main.go"), []byte("package main // "+w.Branch+"\n"), 0o644)
			}
			outs[i], errs[i] = w.Finish(ctx, "parallel")
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, o := range outs {
		must(t, errs[i])
		if seen[o.Branch] || o.Changed != (i > 0) {
			t.Fatalf("outcome %d: %+v", i, o)
		}
		seen[o.Branch] = true
		if i > 0 {
			if got := plainGit(t, dir, "show", o.Branch+":main.go"); got != "package main // "+o.Branch {
				t.Fatalf("%s has %q", o.Branch, got)
			}
		}
	}
}

// TestNotARepository is a clear error.
func TestNotARepository(t *testing.T) {
	_, err := Create(context.Background(), t.TempDir(), t.TempDir(), "agent-lsp/x", false)
	if err == nil || !strings.Contains(err.Error(), "not in a git repository") {
		t.Fatalf("err = %v", err)
	}
}

// TestCrashedWorktreeIsContinued: a fixed branch whose worktree is still
// there (its run crashed) is continued, with what it held.
func TestCrashedWorktreeIsContinued(t *testing.T) {
	dir := newRepo(t)
	state := t.TempDir()
	ctx := context.Background()
	w, err := Create(ctx, dir, state, "agent-lsp/c-sub", true)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(w.Root, "wip.txt"), []byte("wip\n"), 0o644))
	if got := Left(state); len(got) != 1 || got[0] != w.Dir {
		t.Fatalf("left %v, want %s", got, w.Dir)
	}
	again, err := Create(ctx, dir, state, "agent-lsp/c-sub", true)
	must(t, err)
	if !again.Reused || again.Dir != w.Dir {
		t.Fatalf("not continued: %+v", again)
	}
	out, err := again.Finish(ctx, "continued")
	must(t, err)
	if got := plainGit(t, dir, "show", out.Branch+":wip.txt"); got != "wip" {
		t.Fatalf("wip.txt on the branch: %q", got)
	}
}
