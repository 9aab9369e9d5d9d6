//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// nobody is the second user tests run processes as (they run as root in CI).
const nobody = 65534

// publicDir is a directory every user can read and enter but only root
// can write, removed when the test ends.
func publicDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agent-lsp-public")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// squatter starts testdata/hostile/squatter as nobody on the socket name;
// received gives its report lines, one per connection it accepted.
func squatter(t *testing.T, name string) (received func() []string) {
	t.Helper()
	bin := filepath.Join(publicDir(t), "squatter")
	if out, err := exec.Command("go", "build", "-o", bin, "../../testdata/hostile/squatter").CombinedOutput(); err != nil {
		t.Fatalf("build the squatter: %v\n%s", err, out)
	}
	os.Chmod(bin, 0o755)
	cmd := exec.Command(bin, name)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "listening" {
		t.Fatalf("the squatter did not bind %s: %q", name, sc.Text())
	}
	go func() {
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return func() []string {
		var got []string
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return got
				}
				got = append(got, l)
			case <-time.After(2 * time.Second): // it reports a connection within a second
				return got
			}
		}
	}
}

// A daemon killed uncleanly leaves its sidecar; another user binds the
// abstract name it names. The next window checks the socket's owner before
// it writes a byte: it sends the squatter nothing (not its environment, not
// the editor's messages), says so on stderr, and a new daemon starts under
// a fresh random name, which the sidecar then names.
func TestDaemonSquatterIsSentNothing(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to run a process as another user")
	}
	store := filepath.Join(t.TempDir(), "sessions.db")
	killDaemonsAtEnd(t, store)
	stopDaemon(t, store)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "first"}, {Text: "second"}}})
	ws := sample(t)
	a := openWindow(t, "", daemonEnv(store, srv), map[string]string{"sample": ws})
	session := runOnce(t, a, "one")
	st, ok := status(t, store)
	if !ok {
		t.Fatal("no daemon")
	}
	syscall.Kill(st.Pid, syscall.SIGKILL)
	a.wait()
	eventually(t, "the daemon to die", func() bool { return len(serving(store)) == 0 })
	var stale struct{ Socket string }
	if b, err := os.ReadFile(store + ".daemon"); err != nil || json.Unmarshal(b, &stale) != nil || stale.Socket != st.Socket {
		t.Fatalf("the killed daemon's sidecar: %s %v", b, err)
	}

	received := squatter(t, st.Socket)
	const secret = "ghp_squatterMustNeverSeeThis"
	b := openWindow(t, "", daemonEnv(store, srv, "GITHUB_TOKEN="+secret), map[string]string{"sample": ws})
	listed(t, b, session)
	after, ok := status(t, store)
	if !ok || after.Socket == st.Socket || after.Pid == st.Pid {
		t.Fatalf("no new daemon under a new name: %+v, was %+v", after, st)
	}
	if !strings.Contains(b.stderr.String(), "is held by uid 65534") || !strings.Contains(b.stderr.String(), "it was sent nothing") {
		t.Errorf("the window did not say it ignored the squatter:\n%s", b.stderr)
	}
	got := received()
	if len(got) == 0 {
		t.Fatal("the window never connected to the squatter: the case was not exercised")
	}
	for _, line := range got {
		if !strings.HasPrefix(line, "received 0:") {
			t.Errorf("the squatter received: %s", line)
		}
		if strings.Contains(line, secret) {
			t.Errorf("the squatter got the window's token")
		}
	}
}

// A store in a directory other users can write is never used for a
// daemon: its sidecar could be replaced. No sidecar or lock is written
// there, no directory is chmod-ed, and the window serves itself, saying why.
func TestDaemonRefusesASharedStoreDirectory(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "served"}}})
	dir := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(dir, 0o777)
	os.Chmod(dir, 0o777)
	store := filepath.Join(dir, "sessions.db")
	killDaemonsAtEnd(t, store)
	w := openWindow(t, "", daemonEnv(store, srv), map[string]string{"sample": sample(t)})
	runOnce(t, w, "hello")
	if !strings.Contains(w.stderr.String(), "is writable by every user (mode 0777)") || !w.told("is writable by every user") {
		t.Errorf("the window did not say why:\n%s\n%v", w.stderr, w.shown())
	}
	for _, f := range []string{".daemon", ".daemon.lock"} {
		if _, err := os.Stat(store + f); !os.IsNotExist(err) {
			t.Errorf("%s was written in the shared directory: %v", f, err)
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o777 {
		t.Errorf("the directory's mode was changed to %v", fi.Mode())
	}
}

// told reports whether the window was shown a message containing s.
func (w *window) told(s string) bool {
	for _, m := range w.shown() {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// shown returns the window/showMessage texts the window got.
func (w *window) shown() []string {
	var out []string
	for _, raw := range w.conn.Messages("window/showMessage") {
		var m struct{ Message string }
		json.Unmarshal(raw, &m)
		out = append(out, m.Message)
	}
	return out
}

// When no daemon can be started (here the store's directory cannot be
// made: its parent is a file), the window's server serves in-process with
// the fallbacks of AGENT_LSP_DAEMON=off: sessions in memory, and a
// window/showMessage saying so. It used to exit before answering
// initialize. A headless run on that store exits 2: its session could not
// be stored.
func TestDaemonUnavailableWindowServesItself(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "served in-process"}, {Text: "never"}}})
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(blocker, []byte("x"), 0o600)
	store := filepath.Join(blocker, "state", "sessions.db")
	w := openWindow(t, "", daemonEnv(store, srv), map[string]string{"sample": sample(t)})
	var r result
	if err := w.command("agent.run", map[string]any{"prompt": "hello"}, &r); err != nil || r.Status != "done" || r.Reply != "served in-process" {
		t.Fatalf("run: %+v %v\n%s", r, err, w.stderr)
	}
	if !w.told("no agent-lsp daemon could be started") || !w.told("This window serves itself") || !w.told("kept in memory only") {
		t.Fatalf("the window was not told: %v\n%s", w.shown(), w.stderr)
	}
	if code := w.close(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	run := exec.Command(binary, "run", "--workspace", sample(t), "--json", "hello")
	run.Env = append(os.Environ(), daemonEnv(store, srv)...)
	out, err := run.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "not a directory") {
		t.Fatalf("headless run: %v\n%s", err, out)
	}
}

// A daemon whose sidecar was removed while it runs is still found: by the
// lock file's record of it at once, and by its sidecar, which it writes
// again within seconds. Each new window used to start a second daemon,
// which failed "store is in use", and exited.
func TestDaemonSidecarRemoved(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	srv := model(t, scripted.Script{})
	ws := sample(t)
	a := openWindow(t, "", daemonEnv(store, srv, "AGENT_LSP_DAEMON_IDLE=1h"), map[string]string{"sample": ws})
	before, ok := status(t, store)
	if !ok {
		t.Fatal("no daemon")
	}
	for _, c := range []struct {
		name   string
		remove []string
	}{
		{"the sidecar", []string{store + ".daemon"}},
		{"the sidecar and the lock file", []string{store + ".daemon", store + ".daemon.lock"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, f := range c.remove {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
			b := openWindow(t, "", daemonEnv(store, srv), map[string]string{"sample": ws})
			st, ok := status(t, store)
			if !ok || st.Pid != before.Pid || st.Connections != 2 || len(serving(store)) != 1 {
				t.Fatalf("status %+v (ok %v), before %+v, daemons %v\n%s", st, ok, before, serving(store), b.stderr)
			}
			if b.told("could not be started") {
				t.Fatalf("the window served itself: %v", b.shown())
			}
			eventually(t, "the sidecar to be written again", func() bool { _, err := os.Stat(store + ".daemon"); return err == nil })
			b.close()
		})
	}
	a.close()
}

// The window's forwarder never holds more of the editor's first message
// than arrived, nor more than the server's 32 MiB limit: a header that
// claims 250 MB, followed by 1 MB, used to cost it 265 MB.
func TestForwarderFirstFrameIsBounded(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	srv := model(t, scripted.Script{})
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), daemonEnv(store, srv)...)
	stdin, _ := cmd.StdinPipe()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	fmt.Fprintf(stdin, "Content-Length: %d\r\n\r\n", 250<<20)
	chunk := strings.Repeat("x", 64<<10)
	for range 16 {
		if _, err := io.WriteString(stdin, chunk); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // for the forwarder to take what it would
	if hwm := peakRSS(t, cmd.Process.Pid); hwm > 120<<20 {
		t.Fatalf("the forwarder's peak RSS is %d MiB after a 1 MiB message claiming 250 MB", hwm>>20)
	} else {
		t.Logf("the forwarder's peak RSS: %d MiB", hwm>>20)
	}
}

// peakRSS is a process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}
