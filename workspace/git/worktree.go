package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Worktree is a git worktree of a repository's HEAD on a branch of its own,
// in a folder outside the repository, that an agent run works in.
type Worktree struct {
	repo   *Repo
	Branch string // e.g. agent-lsp/1a2b3c4d-1
	Dir    string // the worktree's top folder
	// Root is the project's folder inside Dir: Dir itself, or the same
	// subfolder the project is of its repository.
	Root string
	Base string // the commit it started from
	// Reused is true when Create found the worktree left by an earlier run
	// (a crash) and continues in it.
	Reused bool
}

// Outcome is what Finish did: the branch, its commit (Commit == Base when
// nothing was changed) and whether the worktree was removed.
type Outcome struct {
	Branch  string `json:"branch"`
	Commit  string `json:"commit"`
	Base    string `json:"base"`
	Changed bool   `json:"changed"`
	// Left is the worktree's folder when it could not be removed (its
	// changes are committed to Branch all the same).
	Left string `json:"left,omitempty"`
}

// Folder is where the worktrees of the repository whose top folder is top
// live under state: <state>/worktrees/<hash of top>.
func Folder(state, top string) string {
	sum := sha256.Sum256([]byte(top))
	return filepath.Join(state, "worktrees", hex.EncodeToString(sum[:6]))
}

// Create makes a worktree of project's repository HEAD on a new branch
// prefix-N (the first N whose branch and folder are free) in state's
// worktrees folder. With fixed set, the branch is exactly prefix and an
// existing worktree of it is continued (a resumed subagent).
func Create(ctx context.Context, project, state, prefix string, fixed bool) (*Worktree, error) {
	repo, err := Open(ctx, project, nil)
	if err != nil {
		return nil, err
	}
	top, err := repo.Run(ctx, project, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	top = strings.TrimSpace(top)
	rel, err := relInside(top, project)
	if err != nil {
		return nil, err
	}
	base, err := repo.Run(ctx, project, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("the repository of %s has no commit to start a worktree from: %w", project, err)
	}
	w := &Worktree{repo: repo, Base: strings.TrimSpace(base)}
	repo.locked(func() { err = w.claim(ctx, project, Folder(state, top), rel, prefix, fixed) })
	if err != nil {
		return nil, err
	}
	return w, nil
}

// claim picks the worktree's branch and folder and adds it, holding the
// repository's lock so that two runs never pick the same name.
func (w *Worktree) claim(ctx context.Context, project, folder, rel, prefix string, fixed bool) error {
	for n := 1; ; n++ {
		w.Branch = prefix + "-" + strconv.Itoa(n)
		if fixed {
			w.Branch = prefix
		}
		w.Dir = filepath.Join(folder, filepath.FromSlash(w.Branch))
		w.Root = filepath.Join(w.Dir, rel)
		if fixed {
			if _, err := os.Stat(filepath.Join(w.Dir, ".git")); err == nil {
				w.Reused = true
				return nil
			}
		}
		_, exists := w.repo.run(ctx, project, "rev-parse", "--verify", "--quiet", "refs/heads/"+w.Branch)
		if _, serr := os.Lstat(w.Dir); exists != nil && errors.Is(serr, os.ErrNotExist) {
			break
		}
		if fixed {
			fixed, prefix = false, prefix+"-r" // its branch exists from an earlier run: a new one beside it
		}
		if n > 1000 {
			return fmt.Errorf("no free branch name %s-N for %s", prefix, project)
		}
	}
	if err := os.MkdirAll(filepath.Dir(w.Dir), 0o700); err != nil {
		return fmt.Errorf("worktree folder: %w", err)
	}
	_, err := w.repo.run(ctx, project, "worktree", "add", "--quiet", "-b", w.Branch, w.Dir, w.Base)
	return err
}

// relInside is path relative to top, which must contain it.
func relInside(top, path string) (string, error) {
	realPath, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	realTop, err := filepath.EvalSymlinks(top)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(realTop, realPath)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is not inside its repository %s", path, top)
	}
	return rel, nil
}

// Finish commits every change in the worktree (new, changed and deleted
// files) to its branch with message, without hooks, then removes the
// worktree; the branch stays. The commit is made even when ctx is done.
func (w *Worktree) Finish(ctx context.Context, message string) (Outcome, error) {
	ctx = context.WithoutCancel(ctx)
	out := Outcome{Branch: w.Branch, Base: w.Base}
	if _, err := w.repo.Run(ctx, w.Dir, "add", "--all", "--", "."); err != nil {
		out.Left = w.Dir
		return out, err
	}
	if _, err := w.repo.Run(ctx, w.Dir, "diff", "--cached", "--quiet"); err != nil {
		if ExitCode(err) != 1 {
			out.Left = w.Dir
			return out, err
		}
		if _, err := w.repo.Run(ctx, w.Dir, w.identity(ctx, "commit", "--no-verify", "--quiet", "--no-gpg-sign", "-m", message)...); err != nil {
			out.Left = w.Dir
			return out, err
		}
	}
	head, err := w.repo.Run(ctx, w.Dir, "rev-parse", "HEAD")
	if err != nil {
		out.Left = w.Dir
		return out, err
	}
	out.Commit = strings.TrimSpace(head)
	out.Changed = out.Commit != w.Base
	if _, err := w.repo.Run(ctx, w.Dir, "worktree", "remove", "--force", w.Dir); err != nil {
		out.Left = w.Dir
		return out, err
	}
	return out, nil
}

// identity prefixes args with an author and committer for a repository
// where the user set none (git would refuse to commit).
func (w *Worktree) identity(ctx context.Context, args ...string) []string {
	if email, _ := w.repo.Run(ctx, w.Dir, "config", "user.email"); strings.TrimSpace(email) != "" {
		return args
	}
	return append([]string{"-c", "user.name=agent-lsp", "-c", "user.email=agent-lsp@localhost"}, args...)
}

// Left lists the worktrees left under state (by a run that crashed, or one
// still running in another process): their folders.
func Left(state string) []string {
	var out []string
	roots, _ := filepath.Glob(filepath.Join(state, "worktrees", "*"))
	for _, r := range roots {
		_ = filepath.WalkDir(r, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() || path == r {
				return nil
			}
			if _, err := os.Lstat(filepath.Join(path, ".git")); err == nil {
				out = append(out, path)
				return filepath.SkipDir
			}
			return nil
		})
	}
	return out
}
