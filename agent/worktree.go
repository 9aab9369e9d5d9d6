package agent

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
	"github.com/agent-lsp/agent-lsp/workspace/git"
)

// IsolationWorktree is Request.Isolation (and a subagent's) for a run that
// works in a git worktree of its project's HEAD on a branch of its own
// (docs/worktrees.md).
const IsolationWorktree = "worktree"

// CheckIsolation is nil for an isolation a run may ask for: "", "none" or
// "worktree".
func CheckIsolation(s string) error {
	switch s {
	case "", "none", IsolationWorktree:
		return nil
	}
	return fmt.Errorf("isolation %q: give worktree or none", s)
}

// isolated is a run, or a subagent, working in a worktree: the worktree,
// its project in the workspace (registered while it runs), and the project
// it was made of.
type isolated struct {
	wt      *git.Worktree
	project string
	from    string // the project's name
	fromDir string // and its folder
	prompt  string // what it was asked, for the commit's message
	done    bool   // committed and removed (leaveWorktree); owned by the run's goroutine
}

// stateDir is where the runtime keeps worktrees: $XDG_STATE_HOME/agent-lsp
// of the commands' environment (the client's), else of this process.
func (rt *Runtime) stateDir() string {
	getenv := os.Getenv
	if env := rt.cfg.CommandEnv; env != nil {
		getenv = func(k string) string {
			for _, kv := range slices.Backward(env) {
				if v, ok := strings.CutPrefix(kv, k+"="); ok {
					return v
				}
			}
			return ""
		}
	}
	return git.StateDir(getenv)
}

// branchPrefix is the branch name of a session's worktrees, before "-N":
// agent-lsp/ and the session ID's first 8 characters.
func branchPrefix(session string) string {
	id := strings.TrimPrefix(session, "s-")
	return "agent-lsp/" + id[:min(8, len(id))]
}

// enterWorktree makes a worktree of project's repository on a new branch
// (prefix-N; exactly prefix with fixed set, continuing a worktree a crash
// left) and registers its folder as a project of the workspace.
func (rt *Runtime) enterWorktree(ctx context.Context, project, prefix string, fixed bool) (*isolated, error) {
	p, ok := rt.cfg.Workspace.Project(project)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProject, project)
	}
	wt, err := git.Create(ctx, p.Root(), rt.stateDir(), prefix, fixed)
	if err != nil {
		return nil, fmt.Errorf("isolation worktree: %w", err)
	}
	wp, err := rt.cfg.Workspace.Add(project+"@"+filepath.Base(wt.Branch), wt.Root)
	if err != nil {
		_, _ = wt.Finish(ctx, "agent-lsp: worktree not used")
		return nil, fmt.Errorf("isolation worktree: %w", err)
	}
	return &isolated{wt: wt, project: wp.Name(), from: project, fromDir: p.Root()}, nil
}

// leaveWorktree ends a worktree's use: the project leaves the workspace,
// every change is committed to the branch with message (without the
// repository's hooks) and the worktree is removed. A failure leaves the
// worktree where it is (Outcome.Left) so that nothing is lost.
func (rt *Runtime) leaveWorktree(ctx context.Context, iso *isolated, message string) (git.Outcome, error) {
	iso.done = true
	rt.cfg.Workspace.Remove(iso.project)
	out, err := iso.wt.Finish(ctx, message)
	if err != nil {
		rt.cfg.Log("worktree %s of %s: %v (left in %s)", out.Branch, iso.fromDir, err, out.Left)
	}
	return out, err
}

// commitMessage is the message of a worktree's commit: what ran (a line),
// then the prompt or task, cut.
func commitMessage(what, prompt string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	return fmt.Sprintf("agent-lsp: %s: %s\n\n%s\n", what, tools.Cut(first, 72), tools.Cut(strings.TrimSpace(prompt), 4000))
}

// worktreeSummary is what a run's or subagent's result says of its branch.
func worktreeSummary(out git.Outcome, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("the worktree's changes could not be committed (%v); they are in %s", err, cmp.Or(out.Left, "the worktree"))
	case !out.Changed:
		return fmt.Sprintf("branch %s: no change (at %s)", out.Branch, short(out.Base))
	}
	return fmt.Sprintf("branch %s: committed %s (from %s)", out.Branch, short(out.Commit), short(out.Base))
}

func short(commit string) string { return commit[:min(12, len(commit))] }

// worktreeEditor writes the edits of files in a worktree to disk itself
// (no editor shows them), and hands every other edit to the run's editor.
type worktreeEditor struct {
	inner tools.Editor
	ws    *workspace.Workspace
	root  string
}

// Edit implements tools.Editor.
func (e worktreeEditor) Edit(ctx context.Context, fe tools.FileEdit) (tools.EditResult, error) {
	if !inside(e.root, fe.Path) {
		return e.inner.Edit(ctx, fe)
	}
	if why := fe.Decision.Review(nil); why != "" {
		return tools.EditResult{FailureReason: "not written (" + why + "): a run in a worktree cannot ask for the user's confirmation"}, nil
	}
	p, ok := e.ws.ProjectFor(fe.Path)
	if !ok {
		return tools.EditResult{FailureReason: fe.Path + " is outside the worktree's project"}, nil
	}
	text := ""
	if !fe.Create {
		b, err := e.ws.ReadFile(p, fe.Path, workspace.MaxReadSize)
		if err != nil {
			return tools.EditResult{FailureReason: err.Error()}, nil
		}
		text = string(b)
	}
	edits := slices.Clone(fe.Edits)
	slices.SortStableFunc(edits, func(a, b tools.TextEdit) int { // last first: each range is of the original text
		return -cmp.Or(cmp.Compare(a.Range.Start.Line, b.Range.Start.Line), cmp.Compare(a.Range.Start.Character, b.Range.Start.Character))
	})
	changes := make([]workspace.Change, len(edits))
	for i, te := range edits {
		r := te.Range
		changes[i] = workspace.Change{Range: &r, Text: te.NewText}
	}
	text, err := workspace.ApplyChanges(text, changes, e.ws.Encoding())
	if err != nil {
		return tools.EditResult{FailureReason: err.Error()}, nil
	}
	w, err := p.WriteFile(fe.Path, []byte(text))
	if err != nil {
		return tools.EditResult{FailureReason: err.Error()}, nil
	}
	return tools.EditResult{Applied: true, Note: w.Note()}, nil
}

// Save implements tools.Editor: a worktree's files are on disk already.
func (e worktreeEditor) Save(ctx context.Context, paths []string) (tools.SaveResult, error) {
	var mine, others []string
	for _, p := range paths {
		if inside(e.root, p) {
			mine = append(mine, p)
		} else {
			others = append(others, p)
		}
	}
	out := tools.SaveResult{Saved: mine}
	if len(others) == 0 || e.inner == nil {
		return out, nil
	}
	res, err := e.inner.Save(ctx, others)
	res.Saved = append(res.Saved, mine...)
	return res, err
}

// inside reports whether path is root or below it.
func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// isolate makes r work in iso (nil: in its project): its edits of the
// worktree's files go to disk, and finish commits them with a message
// naming the session and prompt.
func (r *run) isolate(iso *isolated, prompt string) {
	if iso == nil {
		return
	}
	r.iso, iso.prompt = iso, prompt
	r.editor = worktreeEditor{inner: r.editor, ws: r.rt.cfg.Workspace, root: iso.wt.Root}
}

// commitRun ends the session's run's worktree, if it has one: the branch
// its changes are on, and the folder they are left in when it could not
// be removed.
func (rt *Runtime) commitRun(ctx context.Context, r *run) (branch, left string) {
	if r.iso == nil || r.iso.done {
		return "", ""
	}
	out, _ := rt.leaveWorktree(ctx, r.iso, commitMessage("session "+r.session.ID, r.iso.prompt))
	return out.Branch, out.Left
}

// resumeWorktree is the worktree a crashed run of sess left (its branch
// prefix-N still checked out under the state folder), registered again
// under the project name the run gave it; nil when there is none.
func (rt *Runtime) resumeWorktree(ctx context.Context, sess store.Session) (*isolated, error) {
	prefix := branchPrefix(sess.ID)
	var branch string
	for _, dir := range git.Left(rt.stateDir()) {
		base := filepath.Base(dir)
		if filepath.Base(filepath.Dir(dir)) != "agent-lsp" || !strings.HasPrefix(base, path.Base(prefix)+"-") {
			continue
		}
		if n := strings.TrimPrefix(base, path.Base(prefix)+"-"); strings.Trim(n, "0123456789") == "" {
			branch = "agent-lsp/" + base
		}
	}
	if branch == "" {
		return nil, nil
	}
	iso, err := rt.enterWorktree(ctx, sess.Project, branch, true)
	if err != nil || !iso.wt.Reused {
		if iso != nil {
			_, _ = rt.leaveWorktree(ctx, iso, "agent-lsp: worktree not used")
		}
		return nil, err
	}
	return iso, nil
}

// childOutcome is what commitChild did: the branch and a sentence for the
// parent.
type childOutcome struct{ Branch, Summary string }

// isolateChild puts a subagent in a worktree of project when its call or
// its definition asks: the branch is fixed by the subagent's context ID,
// so a parent resumed after a crash continues the same worktree. It
// returns the project the child works in.
func (rt *Runtime) isolateChild(ctx context.Context, child *run, project, id string, req tools.SubagentRequest) (string, error) {
	want := req.Isolation
	if want == "" && child.persona != nil {
		want = child.persona.Isolation
	}
	if err := CheckIsolation(want); err != nil {
		return "", fmt.Errorf("error: %w", err)
	}
	if want != IsolationWorktree {
		return project, nil
	}
	iso, err := rt.enterWorktree(ctx, project, branchPrefix(child.session.ID)+"-"+id, true)
	if err != nil {
		return "", fmt.Errorf("error: %w", err)
	}
	child.isolate(iso, req.Task)
	return iso.project, nil
}

// commitChild commits and removes a subagent's worktree once (nothing
// when it has none or it is done).
func (rt *Runtime) commitChild(ctx context.Context, child *run, id string) childOutcome {
	if child.iso == nil || child.iso.done {
		return childOutcome{}
	}
	out, err := rt.leaveWorktree(ctx, child.iso, commitMessage(id+" of session "+child.session.ID, child.iso.prompt))
	return childOutcome{Branch: out.Branch, Summary: worktreeSummary(out, err)}
}
