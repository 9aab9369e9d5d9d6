//go:build unix

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gitAttacks are writes into git metadata that make the user's next git
// command (VS Code's git extension runs `git status` on its own) run a
// program of the repository's: each line is run in the sandbox, then git
// runs unconfined, as the editor would, and must not run it. MARK is the
// file the program would make. Kept with the other hostile inputs in
// testdata/hostile/sandbox-escapes/.
var gitAttacks = []struct{ name, line string }{
	{"commondir", `cp -r .git evilgit && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch MARK; false"\n' >> evilgit/config && echo ../evilgit > .git/commondir`},
	{"config", `printf '[core]\n\tfsmonitor = "touch MARK; false"\n' >> .git/config`},
	{"git config", `git config core.fsmonitor 'touch MARK; false'`},
	{"hooksPath", `mkdir -p .husky2 && printf '#!/bin/sh\ntouch MARK\n' > .husky2/post-checkout && chmod +x .husky2/post-checkout && git config core.hooksPath .husky2`},
	{"nested repository", `printf '[core]\n\tfsmonitor = "touch MARK; false"\n' >> sub/.git/config`},
	{"config.worktree", `printf '[extensions]\n\tworktreeConfig = true\n' >> .git/config; printf '[core]\n\tfsmonitor = "touch MARK; false"\n' > .git/config.worktree`},
	{"alternates", `mkdir -p .git/objects/info && echo /nonexistent > .git/objects/info/alternates && printf '[core]\n\tfsmonitor = "touch MARK; false"\n' >> .git/config`},
	{"modules", `mkdir -p .git/modules/x && printf '[core]\n\tfsmonitor = "touch MARK; false"\n' > .git/modules/x/config`},
}

// The attacks on git metadata of issue 38 fail under both mechanisms, as
// root and not: with namespaces the writes are refused (.git is a read-only
// mount), with a snapshot they are undone; either way git, run afterwards
// as the editor would, runs nothing of the command's. Unsandboxed, the same
// lines do run the program, so the test can fail.
func TestGitMetadataAttacks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	eachUser(t, func(t *testing.T) {
		eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
			for _, a := range gitAttacks {
				t.Run(strings.ReplaceAll(a.name, " ", "_"), func(t *testing.T) {
					root, temp, outside := layout(t)
					os.WriteFile(filepath.Join(root, "main.txt"), []byte("x\n"), 0o644)
					gitRepo(t, root)
					os.MkdirAll(filepath.Join(root, "sub"), 0o755)
					gitRepo(t, filepath.Join(root, "sub"))
					config, _ := os.ReadFile(filepath.Join(root, ".git", "config"))
					mark := filepath.Join(outside, "ran")
					line := strings.ReplaceAll(a.line, "MARK", mark)
					out, code, o := run(t, s, policy(iso, root, temp), line)
					if iso == Namespaces && (code == 0 || !strings.Contains(out, "Read-only file system")) {
						t.Errorf("the write went through: %d %s", code, out)
					}
					gitStatus(t, root)
					gitStatus(t, filepath.Join(root, "sub"))
					exec.Command("git", "-C", root, "checkout", "-q", "-b", "other").Run()
					if _, err := os.Stat(mark); err == nil {
						t.Fatalf("git ran the command's program after %q (%s; %+v)", line, out, o)
					}
					if b, _ := os.ReadFile(filepath.Join(root, ".git", "config")); !strings.HasPrefix(string(b), string(config)) || strings.Contains(string(b), "fsmonitor") {
						t.Errorf(".git/config: %s", b)
					}
					for _, f := range []string{".git/commondir", ".git/config.worktree", ".git/objects/info/alternates", ".git/modules/x/config"} {
						if _, err := os.Stat(filepath.Join(root, f)); err == nil {
							t.Errorf("%s is there after the command", f)
						}
					}
				})
			}
		})
	})
	// The control: unsandboxed, the attacks work.
	for _, a := range gitAttacks[:2] {
		root, outside := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(root, "main.txt"), []byte("x\n"), 0o644)
		gitRepo(t, root)
		mark := filepath.Join(outside, "ran")
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(a.line, "MARK", mark))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s unsandboxed: %v %s", a.name, err, out)
		}
		os.WriteFile(filepath.Join(root, "main.txt"), []byte("changed\n"), 0o644)
		gitStatus(t, root)
		if _, err := os.Stat(mark); err != nil {
			t.Fatalf("the %s attack does not work even unsandboxed: the test proves nothing", a.name)
		}
	}
}

// survivorToken marks the processes a survivor test starts, to find them
// from outside (PIDs inside a PID namespace mean nothing here).
func survivorToken() string { return strconv.Itoa(900000 + os.Getpid()%90000) }

// survivors lists the processes whose command line holds token.
func survivors(token string) []string {
	var out []string
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err != nil || de.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline"))
		if strings.Contains(string(b), token) && alive(atoi(de.Name())) {
			out = append(out, de.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// No process outlives its command: a setsid child that would write a hook
// later, a double-forked one and a nohup one are gone when the command
// returns, and the hook is never written.
func TestNoSurvivors(t *testing.T) {
	eachUser(t, func(t *testing.T) {
		eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
			root, temp, _ := layout(t)
			os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
			os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n"), 0o644)
			token := survivorToken()
			line := fmt.Sprintf(`setsid sh -c 'sleep 2; printf "#!/bin/sh\ntouch pwned\n" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; touch survivor-wrote; sleep %[1]s1' > /dev/null 2>&1 < /dev/null &
(sh -c 'sleep %[1]s2' > /dev/null 2>&1 &)
nohup sleep %[1]s3 > /dev/null 2>&1 &
echo started`, token)
			start := time.Now()
			out, code, _ := run(t, s, policy(iso, root, temp), line)
			if code != 0 || !strings.Contains(out, "started") {
				t.Fatalf("%d %s", code, out)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Fatalf("the command waited %s for its children", d)
			}
			if left := survivors(token); len(left) > 0 {
				t.Fatalf("processes outlived the command: %q", left)
			}
			time.Sleep(3 * time.Second) // past the setsid child's sleep
			for _, f := range []string{".git/hooks/pre-commit", "survivor-wrote"} {
				if _, err := os.Stat(filepath.Join(root, f)); err == nil {
					t.Errorf("%s was written after the command ended", f)
				}
			}
		})
	})
}

// No capability inside, root included: the effective, permitted,
// inheritable and ambient sets are empty, no_new_privs is set, and a
// program exec'd inside gains nothing. The bounding set is empty too where
// the helper may drop it (namespaces, or root).
func TestNoCapabilities(t *testing.T) {
	eachUser(t, func(t *testing.T) {
		eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
			root, temp, _ := layout(t)
			out, code, _ := run(t, s, policy(iso, root, temp), "sh -c 'grep -E \"^(Cap|NoNewPrivs)\" /proc/self/status'")
			if code != 0 {
				t.Fatalf("%d %s", code, out)
			}
			want := []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"}
			if iso == Namespaces || os.Getuid() == 0 {
				want = append(want, "CapBnd:\t0000000000000000")
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("%q missing:\n%s", w, out)
				}
			}
		})
	})
}

// Processes are bounded: a burst of 5,000 sleepers (a bounded stand-in for
// a fork bomb) is capped by the pids limit, the command ends, none of them
// is left, and another command runs meanwhile.
func TestProcessBurstIsCapped(t *testing.T) {
	eachUser(t, func(t *testing.T) {
		eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
			root, temp, _ := layout(t)
			p := policy(iso, root, temp)
			if s.Describe(p).Processes == "" {
				t.Skip("nothing bounds processes here (root without a writable pids cgroup)")
			}
			p.MaxProcs = 150
			token := survivorToken()
			// posix_spawn: a refused clone costs little, where a refused
			// fork of a big process costs a copy of its memory map first.
			line := fmt.Sprintf(`python3 -c "
import os
n = failed = 0
for i in range(5000):
    try:
        os.posix_spawn('/bin/sleep', ['sleep', '120', '%s'], os.environ)
        n += 1
    except OSError:
        failed += 1
print(n, failed)"`, token)
			done := make(chan string, 1)
			go func() {
				other, otherTemp, _ := layout(t)
				out, code, _ := run(t, s, policy(iso, other, otherTemp), "echo meanwhile")
				done <- fmt.Sprintf("%d %s", code, out)
			}()
			out, code, _ := run(t, s, p, line)
			var n, failed int
			if _, err := fmt.Sscan(out, &n, &failed); err != nil || code != 0 {
				t.Fatalf("%d %q", code, out)
			}
			if n >= 300 || failed == 0 || n+failed != 5000 {
				t.Fatalf("%d sleepers started, %d refused: the limit did not hold", n, failed)
			}
			if left := survivors(token); len(left) > 0 {
				t.Fatalf("%d sleepers outlived the command", len(left))
			}
			select {
			case r := <-done:
				if r != "0 meanwhile\n" {
					t.Fatalf("another command: %s", r)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("another command did not run meanwhile")
			}
		})
	})
}

// A repository a command creates (git init, a clone, a hand-made .git) is
// kept, but what the command wrote there that makes git run a program (a
// config's fsmonitor, a hook, a commondir naming a config elsewhere) is set
// aside where git never reads it: the user's git, run afterwards as an
// editor would, runs nothing of it, and the repository's history is intact.
// A .git file the command made (naming metadata elsewhere) is renamed
// aside. Unsandboxed, the same line does run the program.
func TestNewRepositoryIsDisarmed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	const line = `export GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git init -q fresh && echo x > fresh/f && git -C fresh add f && git -C fresh commit -q -m first &&
git -C fresh config core.fsmonitor 'touch MARK.fsmonitor; false' &&
printf '#!/bin/sh\ntouch MARK.hook\n' > fresh/.git/hooks/post-checkout && chmod +x fresh/.git/hooks/post-checkout &&
mkdir -p deep/er && git init -q deep/er && cp -r deep/er/.git evil && printf '[core]\n\tfsmonitor = "touch MARK.commondir; false"\n' >> evil/config && echo ../../../evil > deep/er/.git/commondir &&
mkdir -p wt && git init -q evilwt && mv evilwt/.git evilgd && printf '[core]\n\tfsmonitor = "touch MARK.gitfile; false"\n' >> evilgd/config && echo "gitdir: ../evilgd" > wt/.git`
	check := func(t *testing.T, root, mark string) {
		for _, dir := range []string{"fresh", "deep/er", "wt"} {
			os.WriteFile(filepath.Join(root, dir, "g"), []byte("changed\n"), 0o644)
			gitStatus(t, filepath.Join(root, dir))
		}
		exec.Command("git", "-C", filepath.Join(root, "fresh"), "checkout", "-q", "-b", "other").Run()
	}
	eachUser(t, func(t *testing.T) {
		eachIsolation(t, func(t *testing.T, s *Sandbox, iso Isolation) {
			root, temp, outside := layout(t)
			mark := filepath.Join(outside, "ran")
			out, code, o := run(t, s, policy(iso, root, temp), strings.ReplaceAll(line, "MARK", mark))
			if code != 0 {
				t.Fatalf("the line failed: %s", out)
			}
			check(t, root, mark)
			if marks, _ := filepath.Glob(mark + "*"); len(marks) > 0 {
				t.Fatalf("git ran the command's programs: %q (%+v)", marks, o)
			}
			want := []string{"deep/er/.git (its config and hooks set aside in deep/er/.git/" + Untrusted + ")",
				"fresh/.git (its config and hooks set aside in fresh/.git/" + Untrusted + ")", "wt/.git (renamed wt/.git" + UntrustedSuffix + ")"}
			if !slices.Equal(o.NewRepos, want) {
				t.Errorf("new repositories %q, want %q", o.NewRepos, want)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "fresh", ".git", Untrusted, "config")); !strings.Contains(string(b), "fsmonitor") {
				t.Errorf("the command's config was not kept aside: %q", b)
			}
			if b, err := exec.Command("git", "-C", filepath.Join(root, "fresh"), "log", "--format=%s").CombinedOutput(); err != nil || string(b) != "first\n" {
				t.Errorf("the repository's history: %v %s", err, b)
			}
			// From the next command on, it is read-only (namespaces) or
			// restored (snapshot).
			out, _, _ = run(t, s, policy(iso, root, temp), "git -C fresh config core.fsmonitor 'touch "+mark+".next; false'")
			check(t, root, mark)
			if marks, _ := filepath.Glob(mark + "*"); len(marks) > 0 {
				t.Fatalf("the next command armed it: %q (%s)", marks, out)
			}
		})
	})
	// The control: unsandboxed, the planted programs run.
	root, outside := t.TempDir(), t.TempDir()
	mark := filepath.Join(outside, "ran")
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(line, "MARK", mark))
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unsandboxed: %v %s", err, out)
	}
	check(t, root, mark)
	for _, m := range []string{".fsmonitor", ".hook", ".commondir", ".gitfile"} {
		if _, err := os.Stat(mark + m); err != nil {
			t.Errorf("the %s attack does not work even unsandboxed: the test proves nothing", m)
		}
	}
}
