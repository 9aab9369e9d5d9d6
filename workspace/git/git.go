// Package git runs the server's own git commands: every call goes through
// Run, which turns off what a repository can make git execute (hooks, the
// fsmonitor, filter drivers, signing programs, pagers) and serializes the
// calls of one repository. It holds git worktrees the agent works in
// (worktree.go).
//
// The repository is untrusted: its config (.git/config, included files) may
// name programs, and its hooks are programs. Nothing Run starts may run one.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// locks holds one mutex per repository (by its common git directory): the
// git calls of one repository never overlap, across every runtime of the
// process. It is process-wide on purpose, as git's own locks are per
// repository; it only grows by one small entry per repository touched.
var locks sync.Map // string -> *sync.Mutex

// hardening are the -c options every call carries: no hook, no fsmonitor,
// no signing program, no pager, no editor; no prompt for credentials.
var hardening = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.pager=cat",
	"-c", "core.editor=true",
	"-c", "core.sshCommand=false",
	"-c", "core.askPass=",
	"-c", "commit.gpgSign=false",
	"-c", "tag.gpgSign=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "protocol.allow=never",
	"-c", "diff.external=",
	"-c", "credential.helper=",
}

// Error is a git command that failed: its arguments and what it printed.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Repo is a repository the server runs git in: dir is a folder inside its
// work tree, common its common git directory (the lock's key).
type Repo struct {
	dir    string
	common string
	env    []string
	// neutral are -c options that disable the repository's own filter
	// drivers (read once when the Repo is opened).
	neutral []string
}

// Open finds the repository dir is in. env is the environment git runs
// with (nil: a minimal one from this process's: PATH, HOME, LANG).
func Open(ctx context.Context, dir string, env []string) (*Repo, error) {
	if env == nil {
		env = minimalEnv()
	}
	r := &Repo{dir: dir, env: env}
	out, err := r.raw(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git repository: %w", dir, err)
	}
	r.common = strings.TrimSpace(out)
	filters, _ := r.raw(ctx, dir, "config", "--null", "--name-only", "--get-regexp", `^filter\.`)
	r.neutral = neutralFilters(filters)
	return r, nil
}

// neutralFilters turns the names of a repository's filter settings (NUL
// separated) into -c options that disable each driver: an empty clean,
// smudge and process command is no filter to git.
func neutralFilters(names string) []string {
	seen := map[string]bool{}
	var out []string
	for n := range strings.SplitSeq(names, "\x00") {
		n = strings.TrimSpace(n)
		i := strings.LastIndexByte(n, '.')
		if !strings.HasPrefix(strings.ToLower(n), "filter.") || i <= len("filter") {
			continue
		}
		driver := n[:i]
		if seen[driver] {
			continue
		}
		seen[driver] = true
		for _, k := range []string{"clean", "smudge", "process"} {
			out = append(out, "-c", driver+"."+k+"=")
		}
		out = append(out, "-c", driver+".required=false")
	}
	return out
}

// Common is the repository's common git directory.
func (r *Repo) Common() string { return r.common }

// Run runs git with args in dir (a folder of the repository or of one of
// its worktrees), hardened and serialized with the repository's other
// calls, and returns its standard output.
func (r *Repo) Run(ctx context.Context, dir string, args ...string) (out string, err error) {
	r.locked(func() { out, err = r.run(ctx, dir, args...) })
	return out, err
}

// locked calls f holding the repository's lock: f's calls (r.run) are one
// step no other call of the repository interleaves with.
func (r *Repo) locked(f func()) {
	mu, _ := locks.LoadOrStore(r.common, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	f()
}

// run is Run for a caller that holds the lock (locked).
func (r *Repo) run(ctx context.Context, dir string, args ...string) (string, error) {
	return r.raw(ctx, dir, append(append([]string(nil), r.neutral...), args...)...)
}

// raw runs one hardened git command without the repository's lock.
func (r *Repo) raw(ctx context.Context, dir string, args ...string) (string, error) {
	full := append(append([]string{"--no-pager", "-C", dir}, hardening...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = r.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &Error{Args: args, Stderr: limit(stderr.String(), 2000), Err: err}
	}
	return stdout.String(), nil
}

func limit(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// minimalEnv is what git needs of this process's environment: where
// programs and the user's ~/.gitconfig are, and nothing of git's own
// variables (GIT_DIR, GIT_CONFIG_*, ...) or any secret.
func minimalEnv() []string {
	env := []string{"LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1"}
	for _, k := range []string{"PATH", "HOME", "XDG_CONFIG_HOME", "USERPROFILE", "SYSTEMROOT", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// ExitCode is the exit status of a failed git command, -1 for another error.
func ExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// StateDir is where agent-lsp keeps worktrees: $XDG_STATE_HOME/agent-lsp,
// else ~/.local/state/agent-lsp (the XDG spec's default), else a folder of
// the system's temporary directory. getenv reads the environment.
func StateDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agent-lsp")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "agent-lsp")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "agent-lsp")
	}
	return filepath.Join(os.TempDir(), "agent-lsp-state")
}
