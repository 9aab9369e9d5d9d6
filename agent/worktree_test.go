//go:build unix

package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace/git"
)

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A run in a worktree that crashed left it with uncommitted work: resuming
// the session finds it under the state folder, registers it again under
// the same project name, and its end commits the work to its branch.
func TestResumeFindsTheCrashedRunsWorktree(t *testing.T) {
	state := t.TempDir()
	h := newHarness(t, scripted.Script{}, Config{CommandEnv: append(os.Environ(), "XDG_STATE_HOME="+state)})
	root := h.roots["sample"]
	gitT(t, root, "init", "-q")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "sample")
	ctx := context.Background()
	sess := store.Session{ID: "s-01CRASHED0000000000000001", Project: "sample", Root: root}
	iso, err := h.rt.enterWorktree(ctx, "sample", branchPrefix(sess.ID), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(iso.wt.Root, "wip.txt"), []byte("wip\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ws.Remove(iso.project) // the process that crashed is gone, and its workspace with it
	if got := git.Left(filepath.Join(state, "agent-lsp")); len(got) != 1 {
		t.Fatalf("left: %v", got)
	}
	again, err := h.rt.resumeWorktree(ctx, sess)
	if err != nil || again == nil || !again.wt.Reused || again.project != iso.project || again.wt.Branch != iso.wt.Branch {
		t.Fatalf("resume found %+v, %v; the crashed run had %+v", again, err, iso)
	}
	if p, ok := h.ws.Project(again.project); !ok || p.Root() != iso.wt.Root {
		t.Fatalf("project %s not registered at %s", again.project, iso.wt.Root)
	}
	out, err := h.rt.leaveWorktree(ctx, again, commitMessage("session "+sess.ID, "the prompt"))
	if err != nil || !out.Changed {
		t.Fatalf("%+v, %v", out, err)
	}
	if got := gitT(t, root, "show", out.Branch+":wip.txt"); got != "wip" {
		t.Fatalf("wip.txt on %s: %q", out.Branch, got)
	}
	if _, err := os.Stat(filepath.Join(root, "wip.txt")); !os.IsNotExist(err) {
		t.Fatal("the work reached the main tree")
	}
	if again, err := h.rt.resumeWorktree(ctx, sess); again != nil || err != nil {
		t.Fatalf("a finished worktree was found again: %+v, %v", again, err)
	}
}
