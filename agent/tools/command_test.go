//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// TestMain lets the test binary be the sandbox's helper.
// TestMain lets this binary serve as the sandbox's helper, and removes the
// Go tree the search tests copied.
func TestMain(m *testing.M) {
	sandbox.Main()
	code := m.Run()
	if goroot.dir != "" {
		os.RemoveAll(filepath.Dir(goroot.dir))
	}
	os.Exit(code)
}

// permRecorder grants every command (as a user who allows them) and keeps
// the requests.
type permRecorder struct {
	mu   sync.Mutex // guards reqs
	reqs []CommandRequest
}

func (p *permRecorder) AllowCommand(ctx context.Context, req CommandRequest) (Permission, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, req)
	return Permission{Allowed: true}, nil
}

// sandboxed returns an Env whose commands run in the sandbox under iso, in
// a git repository at root.
func sandboxed(t *testing.T, iso sandbox.Isolation, writable ...string) (*Env, string, *permRecorder) {
	sb, err := sandbox.New(true)
	if err != nil {
		t.Fatal(err)
	}
	if sb.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	root := filepath.Join(t.TempDir(), "p")
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(root, "main.txt"), []byte("x\n"), 0o644)
	git(t, root, "init", "-q", "-b", "main")
	git(t, root, "add", "-A")
	git(t, root, "commit", "-q", "-m", "first")
	ws := workspace.New(workspace.UTF16)
	if _, err := ws.Add("p", root); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	settings := sandbox.Settings{Mode: sandbox.WorkspaceWrite, Temp: t.TempDir(), Writable: writable, Getenv: func(k string) string {
		switch k {
		case sandbox.IsolationEnv:
			return string(iso)
		case "HOME":
			return home
		}
		return os.Getenv(k)
	}}
	if iso == sandbox.Namespaces && sb.Isolation(settings.Policy("p", "", root)) != sandbox.Namespaces {
		t.Skip("namespaces are refused here")
	}
	perms := &permRecorder{}
	env := &Env{Workspace: ws, Project: "p", Permissions: perms, Sandbox: sb, SandboxSettings: settings,
		CommandEnv: append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")}
	return env, root, perms
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

func runLine(t *testing.T, env *Env, line string) Result {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"command": line})
	return All().Call(context.Background(), env, callOf("run_command", string(args)))
}

// A git command that writes its metadata fails in the sandbox, and the
// result names the refused path and what the user can do; the user's
// sandbox.writable naming the project's .git lets it through.
func TestGitWriteRefusedNamesThePath(t *testing.T) {
	env, root, _ := sandboxed(t, sandbox.Namespaces)
	os.WriteFile(filepath.Join(root, "new.txt"), []byte("new\n"), 0o644)
	res := runLine(t, env, "git add new.txt && git commit -q -m more")
	if !res.IsError || !strings.Contains(res.Content, ".git/index.lock") || !strings.Contains(res.Content, "--sandbox-write "+filepath.Join(root, ".git")) {
		t.Fatalf("%+v", res)
	}
	env, root, _ = sandboxed(t, sandbox.Namespaces, "") // a fresh project
	env.SandboxSettings.Writable = []string{filepath.Join(root, ".git")}
	os.WriteFile(filepath.Join(root, "new.txt"), []byte("new\n"), 0o644)
	if res := runLine(t, env, "git add new.txt && git commit -q -m more && git config core.editor true"); res.IsError {
		t.Fatalf("with .git writable: %s", res.Content)
	}
	// A worktree of it is the user's too: its .git file is kept.
	if res := runLine(t, env, "git worktree add -q wt"); res.IsError {
		t.Fatalf("a worktree with .git writable: %s", res.Content)
	}
	if b, err := exec.Command("git", "-C", filepath.Join(root, "wt"), "rev-parse", "--show-toplevel").CombinedOutput(); err != nil || string(b) != filepath.Join(root, "wt")+"\n" {
		t.Fatalf("the worktree: %v %s", err, b)
	}
}

// A protected file with another link makes every command of the project
// ask, naming the file, allow rules notwithstanding.
func TestHardLinkedProtectedFileAsks(t *testing.T) {
	for _, iso := range []sandbox.Isolation{sandbox.Namespaces, sandbox.Snapshot} {
		t.Run(string(iso), func(t *testing.T) {
			env, root, perms := sandboxed(t, iso)
			runLine(t, env, "true")
			if len(perms.reqs) != 1 || perms.reqs[0].AlwaysAsk {
				t.Fatalf("before the link: %+v", perms.reqs)
			}
			if err := os.Link(filepath.Join(root, ".git", "config"), filepath.Join(root, "config-link")); err != nil {
				t.Fatal(err)
			}
			runLine(t, env, "true")
			if r := perms.reqs[1]; !r.AlwaysAsk || r.Trusted || !strings.Contains(r.Note, ".git/config") {
				t.Fatalf("with the link: %+v", r)
			}
		})
	}
}

// Protected paths a command creates (at the root or below) are removed
// after it, and the result says so; a repository it creates is kept, and
// read-only from the next command on.
func TestCreatedProtectedPaths(t *testing.T) {
	for _, iso := range []sandbox.Isolation{sandbox.Namespaces, sandbox.Snapshot} {
		t.Run(string(iso), func(t *testing.T) {
			env, root, _ := sandboxed(t, iso)
			res := runLine(t, env, "echo x > .envrc && mkdir -p .vscode docs && echo {} > .vscode/tasks.json && echo hi > docs/AGENTS.md && git init -q sub")
			if res.IsError {
				t.Fatal(res.Content)
			}
			for _, f := range []string{".envrc", ".vscode", "docs/AGENTS.md"} {
				if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
					t.Errorf("%s is still there", f)
				}
				if !strings.Contains(res.Content, f+" (removed)") {
					t.Errorf("the result does not say %s was removed: %s", f, res.Content)
				}
			}
			if !strings.Contains(res.Content, "sub/.git (its config and hooks set aside") {
				t.Errorf("the new repository is not named: %s", res.Content)
			}
			res = runLine(t, env, "git -C sub config core.fsmonitor 'touch pwned; false'")
			if b, _ := os.ReadFile(filepath.Join(root, "sub", ".git", "config")); strings.Contains(string(b), "fsmonitor") {
				t.Fatalf("the new repository's config was changed: %s", res.Content)
			}
			// git -C names the path from sub: .git/config.
			if iso == sandbox.Namespaces && (!res.IsError || !strings.Contains(res.Content, "refused") || !strings.Contains(res.Content, ".git/config")) {
				t.Fatalf("%+v", res)
			}
		})
	}
}
