//go:build unix

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// unprivilegedEnv marks a copy of this test binary run as a throwaway
// unprivileged uid (see eachUser).
const unprivilegedEnv = "AGENT_LSP_TEST_UNPRIVILEGED"

// helperEnv names the helper a copy of this test binary run as another
// user uses (see helper).
const helperEnv = "AGENT_LSP_TEST_SANDBOX_HELPER"

// helper is the binary the tests' sandboxes run as their helper: the test
// binary itself, but in a race run a build of testdata/helper (the same
// code, without the race detector, whose start costs many times more).
var helper string

// TestMain lets the test binary be the sandbox's helper.
func TestMain(m *testing.M) {
	Main()
	helper = os.Getenv(helperEnv)
	var built string // the directory of a helper built here, removed at the end
	if helper == "" && raceEnabled {
		dir, err := os.MkdirTemp("", "agent-lsp-sandbox-helper-")
		if err != nil {
			panic(err)
		}
		built, helper = dir, filepath.Join(dir, "helper")
		if out, err := exec.Command("go", "build", "-o", helper, "./testdata/helper").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build the helper: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	throwaway.cleanup()
	if built != "" {
		os.RemoveAll(built)
	}
	os.Exit(code)
}

func newSandbox(t testing.TB) *Sandbox {
	s, err := New(true)
	if err != nil {
		t.Fatal(err)
	}
	if helper != "" {
		s.helper = helper
	}
	if s.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	return s
}

// eachIsolation runs fn under both mechanisms: namespaces (skipped where
// they are refused) and snapshot (forced, as where they are refused).
func eachIsolation(t *testing.T, fn func(t *testing.T, s *Sandbox, iso Isolation)) {
	s := newSandbox(t)
	for _, iso := range []Isolation{Namespaces, Snapshot} {
		t.Run(string(iso), func(t *testing.T) {
			if iso == Namespaces && s.Isolation(Policy{Mode: WorkspaceWrite}) != Namespaces {
				t.Skipf("namespaces are refused here: %v", s.probeErr)
			}
			fn(t, s, iso)
		})
	}
}

// policy is a workspace-write policy for root under iso, with temp as the
// temporary directory.
func policy(iso Isolation, root, temp string) Policy {
	p := Policy{Mode: WorkspaceWrite, Root: root, Temp: temp}
	if iso == Snapshot {
		p.Isolation = Snapshot
	}
	return p
}

// run runs a shell line under p in p.Root and returns its output, exit
// status and what the sandbox did after it.
func run(t testing.TB, s *Sandbox, p Policy, line string) (string, int, Outcome) {
	t.Helper()
	// Generous: a cold Go build cache on a loaded machine takes minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	var r *Run
	if s.Confines(p) {
		cmd, r = s.Command(ctx, p, []string{"sh", "-c", line})
	} else {
		cmd = exec.CommandContext(ctx, "sh", "-c", line)
	}
	cmd.Dir = p.Root
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	var o Outcome
	if r != nil {
		o = r.Finish()
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%q did not end: %s", line, buf.String())
	}
	return buf.String(), code, o
}

// layout makes a project, a temporary directory and a directory outside
// both. The outside one is not under /tmp: a command's /tmp is its own
// with namespaces, which would hide it and prove nothing.
func layout(t *testing.T) (root, temp, outside string) {
	base := t.TempDir()
	root, temp = filepath.Join(base, "project"), filepath.Join(base, "tmp")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(temp, 0o755)
	outside, err := os.MkdirTemp("/var/tmp", "agent-lsp-outside-")
	if err != nil {
		t.Skipf("no /var/tmp: %v", err)
	}
	os.Chmod(outside, 0o755)
	t.Cleanup(func() { os.RemoveAll(outside) })
	return root, temp, outside
}

// gitRepo makes root a git repository with one commit.
func gitRepo(t *testing.T, root string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

// gitStatus runs git status in root, unconfined, as the user's editor
// would, with the global and system configuration kept out.
func gitStatus(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// eachUser runs fn as this process's user and, when that is root, again as
// a throwaway unprivileged uid: a copy of this test binary runs the same
// subtest under that uid (it has no passwd entry and owns nothing but the
// directories the test gives it).
func eachUser(t *testing.T, fn func(t *testing.T)) {
	if os.Getenv(unprivilegedEnv) != "" {
		t.Run("unprivileged", fn)
		return
	}
	name := "user"
	if os.Getuid() == 0 {
		name = "root"
	}
	t.Run(name, fn)
	if os.Getuid() != 0 || testing.Short() {
		return
	}
	t.Run("unprivileged", func(t *testing.T) {
		uid, home, binary := throwaway.get(t)
		top := strings.SplitN(t.Name(), "/", 2)[0]
		cmd := exec.Command(binary, "-test.run", "^"+top+"$/^unprivileged$", "-test.count=1", "-test.v")
		env := []string{unprivilegedEnv + "=1", "HOME=" + home, "TMPDIR=/tmp", "PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"}
		if throwaway.helper != "" {
			env = append(env, helperEnv+"="+throwaway.helper)
		}
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k == "GORACE" || k == "GOROOT" || k == "LANG" {
				env = append(env, kv)
			}
		}
		cmd.Env, cmd.Dir = env, home
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: "+top+"/unprivileged")) {
			t.Fatalf("as uid %d: %v\n%s", uid, err, out)
		}
		if testing.Verbose() {
			t.Logf("as uid %d:\n%s", uid, lastLines(out, 40))
		}
	})
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// throwaway is the unprivileged uid of eachUser: a uid no user has, a home
// it owns, and a copy of this binary it may run; made once, removed by
// TestMain.
var throwaway throwawayUser

type throwawayUser struct {
	once   sync.Once
	uid    int
	dir    string
	binary string
	helper string // a copy of helper, if there is one
	err    error
}

func (tw *throwawayUser) get(t *testing.T) (int, string, string) {
	tw.once.Do(func() {
		for uid := 61000 + os.Getpid()%500; uid < 62000; uid++ {
			if _, err := user.LookupId(strconv.Itoa(uid)); err != nil {
				tw.uid = uid
				break
			}
		}
		if tw.uid == 0 {
			tw.err = fmt.Errorf("no free uid")
			return
		}
		if tw.dir, tw.err = os.MkdirTemp("", "agent-lsp-unprivileged-"); tw.err != nil {
			return
		}
		os.Chmod(tw.dir, 0o755)
		home := filepath.Join(tw.dir, "home")
		os.Mkdir(home, 0o755)
		os.Chown(home, tw.uid, tw.uid)
		tw.binary = filepath.Join(tw.dir, "sandbox.test")
		if tw.err = copyFile(os.Args[0], tw.binary); tw.err == nil && helper != "" {
			tw.helper = filepath.Join(tw.dir, "helper")
			tw.err = copyFile(helper, tw.helper)
		}
	})
	if tw.err != nil {
		t.Fatalf("a throwaway user: %v", tw.err)
	}
	return tw.uid, filepath.Join(tw.dir, "home"), tw.binary
}

func (tw *throwawayUser) cleanup() {
	if tw.dir != "" {
		os.RemoveAll(tw.dir)
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// alive reports whether the process pid exists (a zombie counts as gone).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}
