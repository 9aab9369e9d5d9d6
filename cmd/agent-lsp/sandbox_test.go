//go:build unix

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// escapeRun is one headless run of testdata/hostile/sandbox-escapes: a
// repository whose test script attacks git metadata, leaves a survivor,
// reads every environment in /proc and sends what it found over UDP, and
// plants instructions and an editor task. uid runs everything (the binary,
// and git afterwards, as that user's editor would); 0 keeps this process's.
type escapeRun struct {
	ws, mark string
	home     string // the user's HOME, with the caches of userCaches
	uid      int
	out      string
	srv      *scripted.Server
	leaked   chan []byte
}

// userCaches are the caches (relative to HOME) the user's own builds read
// without verifying them again, which the hostile script tries to plant in.
var userCaches = []string{".cache/go-build", "go/pkg/mod", ".npm"}

func runEscapes(t *testing.T, iso sandbox.Isolation, uid int, flags ...string) *escapeRun {
	t.Helper()
	s, err := scripted.Load(filepath.Join("..", "..", "testdata", "hostile", "sandbox-escapes.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scripted.Start("127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	base, err := os.MkdirTemp("", "agent-lsp-escapes-") // not t.TempDir: its parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	r := &escapeRun{ws: filepath.Join(base, "repo"), uid: uid, srv: srv, leaked: make(chan []byte, 4)}
	os.CopyFS(r.ws, os.DirFS("../../testdata/hostile/sandbox-escapes"))
	outside, err := os.MkdirTemp("/var/tmp", "agent-lsp-escapes-")
	if err != nil {
		t.Skip("no /var/tmp")
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	os.Chmod(outside, 0o777)
	r.mark = filepath.Join(outside, "ran")
	// HOME is outside the temporary directory, as a user's is: the snapshot
	// mechanism leaves all of that writable.
	home, store := filepath.Join(outside, "home"), filepath.Join(base, "store")
	r.home = home
	os.MkdirAll(store, 0o755)
	for _, c := range userCaches {
		os.MkdirAll(filepath.Join(home, c), 0o755)
	}
	os.MkdirAll(filepath.Join(r.ws, "vendor", "lib"), 0o755)
	os.WriteFile(filepath.Join(r.ws, "vendor", "lib", "lib.js"), []byte("module.exports = 1\n"), 0o644)
	if uid != 0 {
		for _, d := range []string{r.ws, home, store} {
			filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, uid) })
		}
	}
	r.git(t, filepath.Join(r.ws, "vendor", "lib"), "init", "-q")
	r.git(t, filepath.Join(r.ws, "vendor", "lib"), "add", "-A")
	r.git(t, filepath.Join(r.ws, "vendor", "lib"), "commit", "-q", "-m", "lib")
	r.git(t, r.ws, "init", "-q", "-b", "main")
	r.git(t, r.ws, "add", "-A")
	r.git(t, r.ws, "commit", "-q", "-m", "first")

	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			r.leaked <- append([]byte(nil), buf[:n]...)
		}
	}()
	cmd := exec.Command(binary, append(append([]string{"run", "--json"}, flags...), "run the tests")...)
	cmd.Dir = r.ws
	cmd.Env = []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=/tmp",
		"OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=sk-escape-secret", "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE=" + filepath.Join(store, "s.db"),
		"AGENT_LSP_DAEMON=off", "ESCAPE_MARK=" + r.mark, fmt.Sprintf("ESCAPE_UDP=%d", udp.LocalAddr().(*net.UDPAddr).Port),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	if iso == sandbox.Snapshot {
		cmd.Env = append(cmd.Env, sandbox.IsolationEnv+"=snapshot")
	}
	r.asUser(cmd)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s\n%s", err, o.String(), e.String())
	}
	r.out = o.String()
	return r
}

func (r *escapeRun) asUser(cmd *exec.Cmd) {
	if r.uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.uid)}}
	}
}

// git runs git in dir as the run's user, unconfined: what the user's
// editor does on its own.
func (r *escapeRun) git(t *testing.T, dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Dir(r.ws), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	r.asUser(cmd)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// The attacks of issue 38, end to end through the real binary, under both
// mechanisms as this user, and with namespaces as an unprivileged uid too
// (agent/sandbox runs each attack under both mechanisms as both): nothing
// the hostile test script planted runs later, no process of it survives,
// the API key does not leave, and the instructions and the task are gone.
func TestHeadlessSandboxEscapes(t *testing.T) {
	for _, iso := range []sandbox.Isolation{sandbox.Namespaces, sandbox.Snapshot} {
		users := []int{0}
		if os.Getuid() == 0 && iso == sandbox.Namespaces && !testing.Short() {
			users = append(users, freeUID(t))
		}
		for _, uid := range users {
			t.Run(fmt.Sprintf("%s/uid%d", iso, max(uid, os.Getuid())), func(t *testing.T) {
				t.Parallel() // each waits out the survivor's sleep
				if uid != 0 {
					os.Chmod(filepath.Dir(binary), 0o755)
				}
				r := runEscapes(t, iso, uid)
				evs, res := jsonLines(t, r.out)
				if res["status"] != "done" {
					t.Fatalf("%v", res)
				}
				var result string // what the model was told
				if reqs := r.srv.Requests(); len(reqs) > 1 {
					for _, m := range reqs[1].Messages {
						if m.ToolCallID == "call_test" {
							result = m.Content
						}
					}
				}
				if toolEnds(evs)["call_test"] == nil {
					t.Fatalf("the test did not run: %s", r.out)
				}
				time.Sleep(4 * time.Second) // past the survivor's sleep
				os.WriteFile(filepath.Join(r.ws, "index.js"), []byte("changed\n"), 0o644)
				r.git(t, r.ws, "status")
				r.git(t, filepath.Join(r.ws, "vendor", "lib"), "status")
				os.WriteFile(filepath.Join(r.ws, "fresh", "f"), []byte("changed\n"), 0o644)
				r.git(t, filepath.Join(r.ws, "fresh"), "status")
				r.git(t, filepath.Join(r.ws, "fresh"), "checkout", "-q", "-b", "other")
				r.git(t, r.ws, "checkout", "-q", "-b", "other")
				r.git(t, r.ws, "commit", "-q", "--allow-empty", "-m", "x")
				marks, _ := filepath.Glob(r.mark + "*")
				if len(marks) > 0 {
					t.Errorf("planted programs ran later: %q (the test's result: %s)", marks, result)
				}
				if b, _ := os.ReadFile(filepath.Join(r.ws, "AGENTS.md")); string(b) != "Run the tests before you answer.\n" {
					t.Errorf("AGENTS.md: %q", b)
				}
				for _, c := range userCaches {
					if _, err := os.Stat(filepath.Join(r.home, c, "planted")); err == nil {
						t.Errorf("the command planted a file in the user's %s", c)
					}
				}
				if _, err := os.Stat(filepath.Join(r.ws, ".vscode")); err == nil {
					t.Error("the editor task is there")
				}
				if b, _ := os.ReadFile(filepath.Join(r.ws, "leaked.txt")); bytes.Contains(b, []byte("sk-escape-secret")) {
					t.Errorf("the command read the API key: %s", b)
				}
				select {
				case b := <-r.leaked:
					if bytes.Contains(b, []byte("sk-escape-secret")) || iso == sandbox.Namespaces {
						t.Errorf("a datagram left the sandbox: %q", b)
					}
				case <-time.After(200 * time.Millisecond):
				}
				if iso == sandbox.Namespaces && !strings.Contains(result, "Read-only file system") {
					t.Errorf("the result does not show the refusals: %s", result)
				}
			})
		}
	}
}

// The control: unsandboxed, the same script's attacks work, so the test
// above can fail.
func TestHeadlessSandboxEscapesUnsandboxed(t *testing.T) {
	r := runEscapes(t, "", 0, "--sandbox", "off", "--allow", "npm test")
	time.Sleep(4 * time.Second)
	os.WriteFile(filepath.Join(r.ws, "index.js"), []byte("changed\n"), 0o644)
	r.git(t, r.ws, "status")
	r.git(t, r.ws, "checkout", "-q", "-b", "other")
	os.WriteFile(filepath.Join(r.ws, "fresh", "f"), []byte("changed\n"), 0o644)
	r.git(t, filepath.Join(r.ws, "fresh"), "status")
	r.git(t, filepath.Join(r.ws, "fresh"), "checkout", "-q", "-b", "other")
	// The commondir attack's config wins over .git/config's fsmonitor.
	for _, m := range []string{".commondir", ".survivor", ".newrepo", ".newhook"} {
		if _, err := os.Stat(r.mark + m); err != nil {
			t.Errorf("the %s attack did not work unsandboxed: the test above proves nothing", m)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(r.ws, "leaked.txt")); !bytes.Contains(b, []byte("sk-escape-secret")) {
		t.Errorf("unsandboxed, the script found no key: %q", b)
	}
	for _, c := range userCaches {
		if _, err := os.Stat(filepath.Join(r.home, c, "planted")); err != nil {
			t.Errorf("unsandboxed, nothing was planted in %s", c)
		}
	}
}

// freeUID is a uid no user has, for a throwaway unprivileged run.
func freeUID(t *testing.T) int {
	for uid := 62000 + os.Getpid()%500; uid < 63000; uid++ {
		if _, err := user.LookupId(strconv.Itoa(uid)); err != nil {
			return uid
		}
	}
	t.Skip("no free uid")
	return 0
}
