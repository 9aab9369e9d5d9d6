//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/workspace/git"
)

// gitIn runs git in dir as a user would (for the test's setup and checks).
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// worktreeCLI is a headless client of a scripted model whose workspace is a
// git repository with one commit, and whose state folder (worktrees) is the
// test's.
func worktreeCLI(t *testing.T, s scripted.Script) (*cli, string) {
	t.Helper()
	srv, err := scripted.Start("127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := &cli{workspace: filepath.Join(t.TempDir(), "sample"), store: filepath.Join(t.TempDir(), "s.db"), srv: srv}
	if err := os.CopyFS(c.workspace, os.DirFS("../../testdata/workspaces/sample")); err != nil {
		t.Fatal(err)
	}
	gitIn(t, c.workspace, "init", "-q", "-b", "main")
	gitIn(t, c.workspace, "add", "-A")
	gitIn(t, c.workspace, "commit", "-q", "-m", "sample")
	return c, t.TempDir()
}

func editGreet(id, text string) scripted.Turn {
	return turnOf(toolCall(id, "edit_file", map[string]any{"path": "greet.go", "old_text": `"Hello, "`, "new_text": text}))
}

// Two subagents in worktrees edit the same file at once: each branch has
// its subagent's commit, each subagent's result names its branch, the main
// tree is untouched and no worktree is left.
func TestHeadlessParallelSubagentWorktrees(t *testing.T) {
	c, state := worktreeCLI(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "TASK-A", Turns: []scripted.Turn{editGreet("call_a", `"Hi, "`), {Text: "A done"}}},
		{Match: "TASK-B", Turns: []scripted.Turn{editGreet("call_b", `"Hey, "`), {Text: "B done"}}},
		{Match: "", Turns: []scripted.Turn{
			turnOf(toolCall("call_sub_a", "call_subagent", map[string]any{"task": "TASK-A: greet with Hi", "isolation": "worktree"}),
				toolCall("call_sub_b", "call_subagent", map[string]any{"task": "TASK-B: greet with Hey", "isolation": "worktree"})),
			{Text: "Both done."}}},
	}})
	cmd := c.command("run", "--no-daemon", "--json", "fan out")
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+state)
	out, code := runCmd(t, cmd)
	if _, res := jsonLines(t, out); code != 0 || res["status"] != "done" {
		t.Fatalf("exit %d: %s", code, out)
	}
	msgs := toolMessages(c.srv)
	branches := strings.Fields(gitIn(t, c.workspace, "branch", "--list", "--format=%(refname:short)", "agent-lsp/*"))
	if len(branches) != 2 {
		t.Fatalf("branches %v\n%s", branches, out)
	}
	var texts []string
	for _, b := range branches {
		named := 0
		for _, id := range []string{"call_sub_a", "call_sub_b"} {
			if strings.Contains(msgs[id], `"branch":"`+b+`"`) {
				named++
			}
		}
		if named != 1 {
			t.Errorf("branch %s is named by %d subagent results: %v", b, named, msgs)
		}
		texts = append(texts, gitIn(t, c.workspace, "show", b+":greet.go"))
		if log := gitIn(t, c.workspace, "log", "--format=%s", "-1", b); !strings.Contains(log, "TASK-") {
			t.Errorf("the commit of %s says %q", b, log)
		}
	}
	slices.Sort(texts)
	if !strings.Contains(texts[0], `"Hey, "`) || !strings.Contains(texts[1], `"Hi, "`) {
		t.Fatalf("the branches hold:\n%s", strings.Join(texts, "\n---\n"))
	}
	if st := gitIn(t, c.workspace, "status", "--porcelain"); st != "" {
		t.Fatalf("the main tree changed:\n%s", st)
	}
	if left := git.Left(filepath.Join(state, "agent-lsp")); left != nil {
		t.Fatalf("worktrees left: %v", left)
	}
	if wl := gitIn(t, c.workspace, "worktree", "list", "--porcelain"); strings.Count(wl, "worktree ") != 1 {
		t.Fatalf("git still lists worktrees:\n%s", wl)
	}
}

// agent-lsp run --isolation worktree: the run edits a worktree, the result
// line names the branch, the branch has the commit (its message names the
// prompt), and the main tree keeps its own uncommitted change, which the
// branch does not have.
func TestHeadlessRunInWorktree(t *testing.T) {
	c, state := worktreeCLI(t, scripted.Script{Turns: []scripted.Turn{editGreet("call_edit", `"Howdy, "`), {Text: "Edited."}}})
	dirty := filepath.Join(c.workspace, "greet_test.go")
	if err := os.WriteFile(dirty, []byte("package sample // uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := c.command("run", "--no-daemon", "--json", "--isolation", "worktree", "say howdy")
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+state)
	out, code := runCmd(t, cmd)
	_, res := jsonLines(t, out)
	branch, _ := res["branch"].(string)
	if code != 0 || res["status"] != "done" || !strings.HasPrefix(branch, "agent-lsp/") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if got := gitIn(t, c.workspace, "show", branch+":greet.go"); !strings.Contains(got, `"Howdy, "`) {
		t.Fatalf("%s has greet.go:\n%s", branch, got)
	}
	if log := gitIn(t, c.workspace, "log", "--format=%B", "-1", branch); !strings.Contains(log, "say howdy") {
		t.Fatalf("commit message %q", log)
	}
	if got := gitIn(t, c.workspace, "show", branch+":greet_test.go"); strings.Contains(got, "uncommitted") {
		t.Fatal("the branch has the main tree's uncommitted change")
	}
	if st := gitIn(t, c.workspace, "status", "--porcelain"); st != "M greet_test.go" {
		t.Fatalf("the main tree's status: %q", st)
	}
	if left := git.Left(filepath.Join(state, "agent-lsp")); left != nil {
		t.Fatalf("worktrees left: %v", left)
	}
}

// A subagent whose file says isolation: worktree works in a worktree
// without the call asking: its result names its branch, which has its
// commit, and the main tree is untouched.
func TestHeadlessAgentFileIsolation(t *testing.T) {
	c, state := worktreeCLI(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "TASK-C", Turns: []scripted.Turn{editGreet("call_c", `"Yo, "`), {Text: "C done"}}},
		{Match: "", Turns: []scripted.Turn{
			turnOf(toolCall("call_sub", "call_subagent", map[string]any{"task": "TASK-C: greet with Yo", "agent": "isolated"})),
			{Text: "Done."}}},
	}})
	dir := filepath.Join(c.workspace, ".agents", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "isolated.md"), []byte("---\ndescription: works on a branch\nisolation: worktree\n---\nDo the task.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, c.workspace, "add", "-A")
	gitIn(t, c.workspace, "commit", "-q", "-m", "agent")
	cmd := c.command("run", "--no-daemon", "--json", "delegate")
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+state)
	out, code := runCmd(t, cmd)
	if _, res := jsonLines(t, out); code != 0 || res["status"] != "done" {
		t.Fatalf("exit %d: %s", code, out)
	}
	msg := toolMessages(c.srv)["call_sub"]
	branches := strings.Fields(gitIn(t, c.workspace, "branch", "--list", "--format=%(refname:short)", "agent-lsp/*"))
	if len(branches) != 1 || !strings.Contains(msg, `"branch":"`+branches[0]+`"`) {
		t.Fatalf("branches %v, the subagent's result: %s", branches, msg)
	}
	if got := gitIn(t, c.workspace, "show", branches[0]+":greet.go"); !strings.Contains(got, `"Yo, "`) {
		t.Fatalf("%s has greet.go:\n%s", branches[0], got)
	}
	if st := gitIn(t, c.workspace, "status", "--porcelain"); st != "" {
		t.Fatalf("the main tree changed:\n%s", st)
	}
}
