//go:build unix

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func rels(sc *scan) []string {
	var out []string
	for _, e := range sc.entries() {
		out = append(out, e.rel)
	}
	return out
}

// A project's scan finds every .git and protected path at any depth (not
// inside node_modules, nor inside a protected directory), sees what was
// added since the last scan, and says when its bounds cut it.
func TestScan(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git/hooks", "a/b/.git", "a/.vscode/x", ".github/workflows", "node_modules/dep/.git", "src/pkg"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	for _, f := range []string{"AGENTS.md", "src/.env.local", "src/main.go", "src/pkg/CLAUDE.md"} {
		os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644)
	}
	os.WriteFile(filepath.Join(root, "wt.git"), nil, 0o644)
	os.Symlink("elsewhere", filepath.Join(root, ".envrc"))
	var ix index
	got := rels(ix.refresh(root))
	want := []string{".envrc", ".git", ".github/workflows", "AGENTS.md", "a/.vscode", "a/b/.git", "src/.env.local", "src/pkg/CLAUDE.md"}
	if !slices.Equal(got, want) {
		t.Fatalf("scan %q, want %q", got, want)
	}
	// Added deep below directories the last scan saw unchanged.
	os.MkdirAll(filepath.Join(root, "src", "pkg", "vendored", ".git"), 0o755)
	os.WriteFile(filepath.Join(root, "a", "b", ".nvim.lua"), nil, 0o644)
	got = rels(ix.refresh(root))
	for _, w := range []string{"src/pkg/vendored/.git", "a/b/.nvim.lua"} {
		if !slices.Contains(got, w) {
			t.Errorf("%s not found after it was made: %q", w, got)
		}
	}
	// The bounds.
	w := walker{root: root, now: time.Now(), maxDirs: 3, maxEntries: 1000}
	w.dir("", nil)
	if !w.truncated {
		t.Error("a scan past its bounds does not say so")
	}
}

// A worktree's .git file names its gitdir and, through it, the shared
// repository: both are made read-only too.
func TestScanFollowsWorktrees(t *testing.T) {
	main, wt := filepath.Join(t.TempDir(), "main"), filepath.Join(t.TempDir(), "wt")
	os.MkdirAll(filepath.Join(main, ".git", "worktrees", "wt"), 0o755)
	os.WriteFile(filepath.Join(main, ".git", "worktrees", "wt", "commondir"), []byte("../..\n"), 0o644)
	os.MkdirAll(wt, 0o755)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(main, ".git", "worktrees", "wt")+"\n"), 0o644)
	var ix index
	b := bindsFor(ix.refresh(wt), Policy{Root: wt})
	want := []string{filepath.Join(main, ".git"), filepath.Join(main, ".git", "worktrees", "wt")}
	if !slices.Equal(b.ro, []string{".git"}) || !slices.Equal(b.roAbs, want) {
		t.Fatalf("binds %+v, want ro [.git] and roAbs %q", b, want)
	}
}

// A directory holding a repository cannot be renamed away and replaced
// (namespaces: it is a mount point), or the replacement's metadata is put
// back (snapshot); a worktree's shared repository, outside the project in a
// directory the user made writable, is read-only with namespaces.
func TestNestedRepositories(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		root, temp, outside := layout(t)
		os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
		gitRepo(t, root)
		sub := filepath.Join(root, "vendor", "lib")
		os.MkdirAll(sub, 0o755)
		os.WriteFile(filepath.Join(sub, "b.txt"), []byte("b\n"), 0o644)
		gitRepo(t, sub)
		mark := filepath.Join(outside, "ran")
		line := `mv vendor/lib vendor/lib-away && mkdir -p vendor/lib && cp -r vendor/lib-away/.git vendor/lib/.git && printf '[core]\n\tfsmonitor = "touch ` + mark + `; false"\n' >> vendor/lib/.git/config`
		out, code, o := run(t, s, policy(iso, root, temp), line)
		if iso == Namespaces && (code == 0 || !strings.Contains(out, "busy")) {
			t.Fatalf("renamed a repository's directory: %d %s", code, out)
		}
		os.WriteFile(filepath.Join(sub, "b.txt"), []byte("changed\n"), 0o644)
		gitStatus(t, sub)
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("git ran the command's program (%s, %+v)", out, o)
		}

		// A worktree of a repository outside the project.
		main := filepath.Join(outside, "main")
		os.MkdirAll(main, 0o755)
		os.WriteFile(filepath.Join(main, "c.txt"), []byte("c\n"), 0o644)
		gitRepo(t, main)
		wt := filepath.Join(filepath.Dir(root), "wt")
		if out, err := exec.Command("git", "-C", main, "worktree", "add", "-q", wt).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		if iso != Namespaces {
			return // snapshot: what lies outside the project is Landlock's, and the user made it writable
		}
		p := policy(iso, wt, temp)
		p.Writable = []string{outside}
		out, code, _ = run(t, s, p, `git config core.fsmonitor 'touch `+mark+`; false'`)
		if code == 0 || !strings.Contains(out, "Read-only file system") {
			t.Fatalf("a worktree's shared config was written: %d %s", code, out)
		}
		if out, code, _ := run(t, s, p, "touch "+filepath.Join(outside, "writable")); code != 0 {
			t.Fatalf("the writable directory is not: %s", out)
		}
	})
}

// The restore never follows a symlink a command put where a directory was:
// it removes the link and makes the directory again, and nothing is written
// where the link pointed.
func TestRestoreFollowsNoSymlink(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		for _, line := range []string{"rm -rf .git/hooks && ln -s OUTSIDE .git/hooks", "mv .git .git-away && ln -s OUTSIDE .git"} {
			root, temp, outside := layout(t)
			os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
			gitRepo(t, root)
			os.WriteFile(filepath.Join(root, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
			out, code, o := run(t, s, policy(iso, root, temp), strings.ReplaceAll(line, "OUTSIDE", outside))
			if iso == Namespaces && code == 0 {
				t.Fatalf("%q went through: %s", line, out)
			}
			if entries, _ := os.ReadDir(outside); len(entries) > 0 {
				t.Fatalf("%q: the restore wrote through the link: %v (%+v)", line, entries, o)
			}
			for _, d := range []string{".git", ".git/hooks"} {
				if fi, err := os.Lstat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
					t.Fatalf("%q: %s is not a directory again (%v, %+v)", line, d, err, o)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(root, ".git", "hooks", "pre-commit")); string(b) != "#!/bin/sh\nexit 0\n" {
				t.Fatalf("%q: the hook is %q", line, b)
			}
		}
	})
}

// Build caches (issue 39): a command's GOCACHE is the sandbox's own, one
// per project; the user's GOCACHE is read-only; the module cache is
// writable only with the project's network allowed; old project caches are
// trimmed.
func TestBuildCaches(t *testing.T) {
	eachUser(t, func(t *testing.T) {
		eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
			root, temp, outside := layout(t)
			home := filepath.Join(filepath.Dir(root), "home")
			userCache, modCache := filepath.Join(outside, "go-build"), filepath.Join(outside, "mod")
			os.MkdirAll(userCache, 0o755)
			os.MkdirAll(modCache, 0o755)
			env := map[string]string{"HOME": home, "GOCACHE": userCache, "GOMODCACHE": modCache}
			if iso == Snapshot {
				env[IsolationEnv] = "snapshot"
			}
			st := Settings{Mode: WorkspaceWrite, Temp: temp, Getenv: func(k string) string { return env[k] }}
			p := st.Policy("proj", "go", root)
			if !strings.HasPrefix(p.GoCache, filepath.Join(home, ".cache", "agent-lsp", "sandbox-go-build")) ||
				p.GoCache == st.Policy("other", "go", filepath.Join(root, "other")).GoCache || len(p.Caches) != 0 || p.Isolation != Isolation(env[IsolationEnv]) {
				t.Fatalf("policy %+v", p)
			}
			old := filepath.Join(filepath.Dir(p.GoCache), "0123456789abcdef")
			os.MkdirAll(old, 0o755)
			os.WriteFile(filepath.Join(old, goCacheUsed), nil, 0o644)
			long := time.Now().Add(-6 * 24 * time.Hour)
			os.Chtimes(filepath.Join(old, goCacheUsed), long, long)

			out, code, _ := run(t, s, p, `echo "$GOCACHE" && touch "$GOCACHE/mine"`)
			if code != 0 || strings.TrimSpace(strings.Split(out, "\n")[0]) != p.GoCache {
				t.Fatalf("GOCACHE: %d %s", code, out)
			}
			for _, dir := range []string{userCache, modCache} {
				if out, code, _ := run(t, s, p, "touch "+dir+"/planted"); code == 0 {
					t.Errorf("wrote %s with the network off: %s", dir, out)
				}
			}
			st.Network = []string{"proj"}
			p = st.Policy("proj", "go", root)
			if !slices.Contains(p.Caches, modCache) {
				t.Fatalf("network allowed, caches %q", p.Caches)
			}
			if out, code, _ := run(t, s, p, "touch "+modCache+"/downloaded"); code != 0 {
				t.Errorf("the module cache with the network allowed: %s", out)
			}
			if out, code, _ := run(t, s, p, "touch "+userCache+"/planted"); code == 0 {
				t.Errorf("wrote the user's GOCACHE: %s", out)
			}
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(old); err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("an unused project cache was not trimmed")
				}
			}
			if _, err := os.Stat(filepath.Join(p.GoCache, "mine")); err != nil {
				t.Fatal("the project's own cache was trimmed")
			}
		})
	})
}

// A protected path that is a symlink: what it points at is read-only, and
// the link is put back if a command changes it.
func TestProtectedSymlink(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		root, temp, _ := layout(t)
		os.MkdirAll(filepath.Join(root, "docs"), 0o755)
		os.WriteFile(filepath.Join(root, "docs", "agents.md"), []byte("be careful\n"), 0o644)
		os.Symlink("docs/agents.md", filepath.Join(root, "AGENTS.md"))
		out, code, o := run(t, s, policy(iso, root, temp), "echo evil >> AGENTS.md; rm AGENTS.md && ln -s /etc/passwd AGENTS.md")
		if iso == Namespaces && !strings.Contains(out, "Read-only file system") {
			t.Errorf("went through: %d %s", code, out)
		}
		if l, _ := os.Readlink(filepath.Join(root, "AGENTS.md")); l != "docs/agents.md" {
			t.Errorf("the link is %q (%+v)", l, o)
		}
		b, _ := os.ReadFile(filepath.Join(root, "docs", "agents.md"))
		if iso == Namespaces && string(b) != "be careful\n" {
			t.Errorf("the link's target was written: %q", b)
		}
	})
}

// Argv (for MCP servers) starts the helper itself, in namespaces or as the
// reaper: the command runs confined, and leaves nothing running.
func TestArgv(t *testing.T) {
	eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
		root, temp, _ := layout(t)
		os.MkdirAll(filepath.Join(root, ".git"), 0o755)
		token := survivorToken()
		argv := s.Argv(policy(iso, root, temp), "sh", "-c", "setsid sleep "+token+"7 > /dev/null 2>&1 < /dev/null & touch .git/x 2>&1; grep CapEff /proc/self/status")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "CapEff:\t0000000000000000") {
			t.Fatalf("%v %s", err, out)
		}
		if iso == Namespaces && !strings.Contains(string(out), "Read-only file system") {
			t.Errorf(".git was writable: %s", out)
		}
		if left := survivors(token + "7"); len(left) > 0 {
			t.Fatalf("left running: %q", left)
		}
	})
}
