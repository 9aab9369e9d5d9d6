//go:build unix

package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/server"
)

const daemonPkg = "github.com/agent-lsp/agent-lsp/server/daemon"

// variants holds, by name, the binaries built once per test binary run.
var variants sync.Map // name -> func() (string, error)

// variant builds (once per test binary run, without -race, next to binary
// so that TestMain removes it) the agent-lsp binary that claims version and
// handshake; "" keeps the current one.
func variant(tb testing.TB, version, handshake string) string {
	tb.Helper()
	name := "agent-lsp-norace"
	if version != "" {
		name += "-v" + version
	}
	if handshake != "" {
		name += "-h" + handshake
	}
	build, _ := variants.LoadOrStore(name, sync.OnceValues(func() (string, error) {
		out := filepath.Join(filepath.Dir(binary), name)
		var ld []string
		if version != "" {
			ld = append(ld, "-X", daemonPkg+".buildVersion="+version)
		}
		if handshake != "" {
			ld = append(ld, "-X", daemonPkg+".handshake="+handshake)
		}
		cmd := exec.Command("go", "build", "-ldflags", strings.Join(ld, " "), "-o", out, ".")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build %s: %v\n%s", name, err, b)
		}
		return out, nil
	}))
	path, err := build.(func() (string, error))()
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// currentHandshake is the handshake this source tree's binaries speak.
func currentHandshake(tb testing.TB) int {
	tb.Helper()
	b, err := os.ReadFile("../../server/daemon/handshake.go")
	if err != nil {
		tb.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^var handshake = "(\d+)"`).FindSubmatch(b)
	if m == nil {
		tb.Fatal("no `var handshake = \"N\"` in server/daemon/handshake.go")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// statusWith is status, asked by bin (a binary of the daemon's own version
// asks without making it retire).
func statusWith(t *testing.T, bin, store string) (daemonStatus, bool) {
	t.Helper()
	if bin == binary {
		return status(t, store)
	}
	out, err := exec.Command(bin, "daemon", "status", "--json", "--store", store).Output()
	var st daemonStatus
	if err != nil {
		return st, false
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status: %v: %s", err, out)
	}
	return st, true
}

// stopDaemonWith stops the store's daemon with bin at the end of a test (a
// daemon of another handshake does not listen to the test binary).
func stopDaemonWith(t *testing.T, bin, store string) {
	if bin == binary {
		stopDaemon(t, store)
		return
	}
	t.Cleanup(func() { exec.Command(bin, "daemon", "stop", "--now", "--store", store).Run() })
}

// killDaemonsAtEnd kills, at the very end of a test, any daemon of store
// the test started that is still there (register it first: it runs last).
func killDaemonsAtEnd(t *testing.T, store string) {
	t.Cleanup(func() {
		within(10*time.Second, func() bool { return len(serving(store)) == 0 }) // a stopped one closes its store first
		for _, pid := range serving(store) {
			t.Errorf("daemon %d of %s outlived the test: killed", pid, store)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// sessionsWith runs `bin sessions ARGS --store store` (through the daemon
// when one runs, else on the store itself).
func sessionsWith(t *testing.T, bin, store string, daemonOn bool, args ...string) (out string, code int) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"sessions"}, args...), "--store", store)...)
	mode := "AGENT_LSP_DAEMON=off"
	if daemonOn {
		mode = "AGENT_LSP_DAEMON=on"
	}
	cmd.Env = append(os.Environ(), mode)
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(b), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(b), 0
}

// serving is daemonsOf(store) without the `daemon status|stop` commands
// that name the store too (nor processes that ended meanwhile).
func serving(store string) []int {
	var pids []int
	for _, pid := range daemonsOf(store) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(b), "\x00")
		if len(args) < 3 || args[2] == "status" || args[2] == "stop" { // (gone by now, or not a daemon)
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// holders lists the processes that have the store file open.
func holders(store string) []int {
	var pids []int
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); l == store {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// describe names processes: pid, state and command line.
func describe(pids []int) string {
	var out []string
	for _, pid := range pids {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		state := ""
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+3 <= len(stat) {
			state = string(stat[i+2 : i+3])
		}
		out = append(out, fmt.Sprintf("%d (%s) %q", pid, state, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
	}
	return strings.Join(out, ", ")
}

// watchStore samples, until the test ends, the daemons serving store and
// the processes holding it open: the test fails if there ever are two.
func watchStore(t *testing.T, store string) {
	stop, done := make(chan struct{}), make(chan struct{})
	var problems []string
	go func() {
		defer close(done)
		for {
			if pids := serving(store); len(pids) > 1 {
				problems = append(problems, fmt.Sprintf("%d daemons serve the store: %s", len(pids), describe(pids)))
			}
			if pids := holders(store); len(pids) > 1 {
				problems = append(problems, fmt.Sprintf("%d processes have the store open: %s", len(pids), describe(pids)))
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		if len(problems) > 0 {
			t.Errorf("the store was shared: %s (%d samples)", problems[0], len(problems))
		}
	})
}

// refusedWindow starts bin as an editor does and initializes it, which must
// fail: it returns the exit code and stderr.
func refusedWindow(t *testing.T, bin string, env []string) (int, string) {
	t.Helper()
	w := startWindow(t, bin, env)
	if err := w.call("initialize", map[string]any{"processId": nil, "capabilities": map[string]any{}}, nil); err == nil {
		t.Fatalf("initialize through an incompatible daemon succeeded\n%s", w.stderr)
	}
	code := w.wait()
	return code, w.stderr.String()
}

// runOnce runs a prompt in w and returns the session, which must be done.
func runOnce(t *testing.T, w *window, prompt string) string {
	t.Helper()
	var r result
	if err := w.command("agent.run", map[string]any{"prompt": prompt}, &r); err != nil || r.Status != "done" {
		t.Fatalf("agent.run: %+v %v\n%s", r, err, w.stderr)
	}
	return r.Session
}

// listed fails the test unless w's agent.sessions lists exactly sessions.
func listed(t *testing.T, w *window, sessions ...string) {
	t.Helper()
	var rows []sessionRow
	if err := w.command("agent.sessions", map[string]any{}, &rows); err != nil {
		t.Fatalf("agent.sessions: %v\n%s", err, w.stderr)
	}
	have := map[string]bool{}
	for _, r := range rows {
		have[r.Session] = true
	}
	for _, s := range sessions {
		if !have[s] {
			t.Fatalf("agent.sessions lists %+v, not %s", rows, s)
		}
	}
	if len(rows) != len(sessions) {
		t.Fatalf("agent.sessions lists %+v, want %v", rows, sessions)
	}
}

// Daemons and forwarders of other versions: one handshake works together
// whatever the versions, and a newer binary's daemon takes over as soon as
// the older daemon has no window left; another handshake is refused with a
// message saying what to do. The store stays whole and owned by one process.
func TestDaemonVersionMismatch(t *testing.T) {
	const old, future = "0.1.0", "9.0.0"
	cur := server.Version
	hs := currentHandshake(t)
	other := strconv.Itoa(hs + 1)
	self, err := filepath.EvalSymlinks(binary)
	if err != nil {
		t.Fatal(err)
	}
	type end struct {
		version, handshake string // "" and "": the test binary
	}
	cases := []struct {
		name              string
		daemon, forwarder end
		works             bool   // the forwarder is served
		message           string // else: what it says (%[1]s: the forwarder's path, %[2]s: the store)
		retires           bool   // the daemon exits once its last window closed
		noWindow          bool   // no window is open when the forwarder connects
	}{
		{name: "older daemon, current forwarder", daemon: end{old, ""}, forwarder: end{}, works: true, retires: true},
		{name: "current daemon, older forwarder", daemon: end{}, forwarder: end{old, ""}, works: true},
		{name: "incompatible newer daemon", daemon: end{future, other}, forwarder: end{},
			message: "which this binary (%[1]s, agent-lsp " + cur + ") cannot talk to: update %[1]s to agent-lsp " + future + " or later"},
		{name: "incompatible older daemon", daemon: end{}, forwarder: end{future, other}, retires: true,
			message: "an older agent-lsp daemon (" + cur + ", incompatible with this agent-lsp " + future + ") serves %[2]s for other windows: it exits once they close (or run `agent-lsp daemon stop`)"},
		{name: "incompatible older daemon without windows", daemon: end{}, forwarder: end{future, other}, retires: true, noWindow: true,
			message: "an older agent-lsp daemon (" + cur + ", incompatible with this agent-lsp " + future + ") serves %[2]s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bin := func(e end) string {
				if e == (end{}) {
					return binary
				}
				return variant(t, e.version, e.handshake)
			}
			dBin, fBin := bin(c.daemon), bin(c.forwarder)
			fPath := self
			if fBin != binary {
				fPath = fBin
			}
			dVersion, fVersion := cmp.Or(c.daemon.version, cur), cmp.Or(c.forwarder.version, cur)
			store := filepath.Join(t.TempDir(), "sessions.db")
			killDaemonsAtEnd(t, store)
			watchStore(t, store)
			stopDaemonWith(t, dBin, store)
			stopDaemonWith(t, fBin, store)
			srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "one"}, {Text: "two"}, {Text: "three"}, {Text: "four"}}})
			ws := sample(t)
			env := daemonEnv(store, srv, "AGENT_LSP_DAEMON_IDLE=1h") // long: a daemon that exits at once retired
			folders := map[string]string{"sample": ws}

			// A window of the daemon's binary starts the daemon and records a session.
			wd := openWindow(t, dBin, env, folders)
			sessions := []string{runOnce(t, wd, "before")}
			first, ok := statusWith(t, dBin, store)
			if !ok || first.Version != dVersion || len(serving(store)) != 1 {
				t.Fatalf("daemon: %+v (running: %v), daemons %v", first, ok, serving(store))
			}
			if c.noWindow {
				if code := wd.close(); code != 0 {
					t.Fatalf("the daemon's window exited %d: %s", code, wd.stderr)
				}
			}

			// The forwarder of the other binary connects.
			var wf *window
			if c.works {
				wf = openWindow(t, fBin, env, folders)
				listed(t, wf, sessions...)
				sessions = append(sessions, runOnce(t, wf, "after"))
				listed(t, wd, sessions...)
				if st, _ := statusWith(t, dBin, store); st.Pid != first.Pid || st.Connections != 2 {
					t.Fatalf("after the forwarder connected: %+v, first %+v", st, first)
				}
			} else {
				code, stderr := refusedWindow(t, fBin, env)
				want := fmt.Sprintf(c.message, fPath, store)
				if code != 1 || !strings.Contains(stderr, want) {
					t.Fatalf("exit %d, stderr:\n%s\nwant it to say %q", code, stderr, want)
				}
				if !c.noWindow { // (else the daemon may be gone by now)
					// Its command line neither (and never opens the store itself).
					out, code := sessionsWith(t, fBin, store, true)
					if code != 1 || !strings.Contains(out, want) {
						t.Fatalf("sessions: exit %d:\n%s\nwant it to say %q", code, out, want)
					}
					if st, ok := statusWith(t, dBin, store); !ok || st.Pid != first.Pid {
						t.Fatalf("after the refusal: %+v (running: %v), first %+v", st, ok, first)
					}
				}
			}

			// The windows close: the daemon retires at once, or keeps waiting its idle time.
			if !c.noWindow {
				listed(t, wd, sessions...) // the refusal left it alone
				if code := wd.close(); code != 0 {
					t.Fatalf("the daemon's window exited %d: %s", code, wd.stderr)
				}
			}
			if wf != nil {
				if code := wf.close(); code != 0 {
					t.Fatalf("the forwarder's window exited %d: %s", code, wf.stderr)
				}
			}
			closed := time.Now()
			if !c.retires {
				time.Sleep(2 * time.Second)
				if st, ok := statusWith(t, dBin, store); !ok || st.Pid != first.Pid || st.Connections != 0 {
					t.Fatalf("2s after its windows closed (idle 1h): %+v (running: %v), first %+v", st, ok, first)
				}
				out, code := sessionsWith(t, dBin, store, true)
				for _, s := range sessions {
					if code != 0 || !strings.Contains(out, s) {
						t.Fatalf("sessions through the daemon: exit %d, %s missing:\n%s", code, s, out)
					}
				}
			} else {
				eventually(t, "the retired daemon to exit", func() bool { return len(serving(store)) == 0 })
				t.Logf("daemon %d exited %s after its last window closed", first.Pid, time.Since(closed).Round(time.Millisecond))
				if _, err := os.Stat(store + ".daemon"); !os.IsNotExist(err) {
					t.Fatalf("the sidecar outlived the daemon: %v", err)
				}
				// The next window of the newer binary starts a daemon of its version.
				next := openWindow(t, fBin, env, folders)
				listed(t, next, sessions...)
				if st, ok := statusWith(t, fBin, store); !ok || st.Version != fVersion || st.Pid == first.Pid {
					t.Fatalf("the next daemon: %+v (running: %v), want agent-lsp %s", st, ok, fVersion)
				}
				if code := next.close(); code != 0 {
					t.Fatalf("the next window exited %d: %s", code, next.stderr)
				}
			}

			// With no daemon, the store itself holds every session.
			for _, bin := range []string{dBin, fBin} {
				exec.Command(bin, "daemon", "stop", "--now", "--store", store).Run()
			}
			eventually(t, "the daemons to exit", func() bool { return len(serving(store)) == 0 && len(holders(store)) == 0 })
			out, code := sessionsWith(t, binary, store, false)
			for _, s := range sessions {
				if code != 0 || !strings.Contains(out, s) {
					t.Fatalf("sessions on the store: exit %d, %s missing:\n%s", code, s, out)
				}
			}
		})
	}
}

// within reports whether cond holds within d.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// Another user who learns the socket's name still cannot use the daemon:
// it refuses the connection (SO_PEERCRED), logs it, and goes on serving
// its user.
func TestDaemonRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to run processes as nobody")
	}
	store := filepath.Join(t.TempDir(), "sessions.db")
	killDaemonsAtEnd(t, store)
	stopDaemon(t, store)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "for root"}}})
	w := openWindow(t, "", daemonEnv(store, srv, "AGENT_LSP_DAEMON_IDLE=1h"), map[string]string{"sample": sample(t)})
	session := runOnce(t, w, "mine")
	before, ok := status(t, store)
	if !ok {
		t.Fatal("no daemon")
	}

	// A directory nobody can read, with the binary and a copy of the
	// sidecar (root's is 0600 in a 0700 directory) next to another store path.
	pub, err := os.MkdirTemp("", "agent-lsp-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	exe := filepath.Join(pub, "agent-lsp")
	sc, err := os.ReadFile(store + ".daemon")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(pub, "sessions.db")
	for _, err := range []error{
		os.WriteFile(exe, b, 0o755), os.Chmod(exe, 0o755),
		os.WriteFile(elsewhere+".daemon", sc, 0o644), os.Chmod(elsewhere+".daemon", 0o644),
		os.Chmod(pub, 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	asNobody := func(stdin string, env []string, args ...string) (string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "AGENT_LSP_DAEMON=on", "AGENT_LSP_LANDLOCK=false"}, env...)
		cmd.Dir = pub
		cmd.Stdin = strings.NewReader(stdin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%v as nobody did not end\n%s", args, stderr.String())
		}
		return stderr.String(), cmd.ProcessState.ExitCode()
	}

	// Without the copy, nobody does not even find the daemon.
	if out, code := asNobody("", nil, "daemon", "status", "--store", store); code != 1 || !strings.Contains(out, "no agent-lsp daemon runs") {
		t.Fatalf("status of root's store as nobody: exit %d: %s", code, out)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"capabilities":{}}}`
	initialize := fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	tries := 0
	for _, attempt := range []struct {
		stdin string
		env   []string
		args  []string
	}{
		{args: []string{"daemon", "status", "--store", elsewhere}},
		{args: []string{"sessions", "--store", elsewhere}},
		{args: []string{"daemon", "stop", "--now", "--store", elsewhere}},
		{stdin: initialize, env: []string{"AGENT_LSP_STORE=" + elsewhere}}, // an editor's server
	} {
		out, code := asNobody(attempt.stdin, attempt.env, attempt.args...)
		tries++
		// The client checks the daemon's user too (SO_PEERCRED) before it
		// writes: root's daemon is not nobody's, and is sent nothing. The
		// editor's server, which cannot start a daemon of its own there,
		// serves itself (without a store: nobody cannot write there).
		editor := len(attempt.args) == 0
		// sessions reads the file itself (there is none there), saying why.
		sessions := !editor && attempt.args[0] == "sessions"
		want := 1
		if editor || sessions {
			want = 0 // the editor's client closed after initialize
		}
		if code != want || !editor && !strings.Contains(out, "is held by uid 0") ||
			sessions && !strings.Contains(out, "reading the store file directly") ||
			editor && !strings.Contains(out, "serving this window in-process") {
			t.Fatalf("%v as nobody: exit %d: %s", attempt.args, code, out)
		}
	}
	log, _ := os.ReadFile(store + ".daemon.log")
	if n := strings.Count(string(log), fmt.Sprintf("refused a connection from uid %d", nobody)); n != tries {
		t.Fatalf("the daemon logged %d refusals of uid %d, want %d:\n%s", n, nobody, tries, log)
	}
	if _, err := os.Stat(elsewhere); !os.IsNotExist(err) {
		t.Fatalf("a store appeared at %s: %v", elsewhere, err)
	}

	// Root is still served, by the same daemon.
	after, ok := status(t, store)
	if !ok || after.Pid != before.Pid || after.Connections != 1 || len(serving(store)) != 1 {
		t.Fatalf("after the refusals: %+v (running: %v), before %+v, daemons %v", after, ok, before, serving(store))
	}
	listed(t, w, session)
	if out, code := sessionsWith(t, binary, store, true); code != 0 || !strings.Contains(out, session) {
		t.Fatalf("sessions as root: exit %d: %s", code, out)
	}
}
