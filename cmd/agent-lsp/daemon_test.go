//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/server/lsptest"
)

// window is an editor window: the binary started as an editor starts it
// (through the daemon), with its own environment and model endpoint, and
// a JSON-RPC client over its stdio.
type window struct {
	t      *testing.T
	cmd    *exec.Cmd
	conn   *lsptest.Client // keeps the events and messages the window got
	stderr *lockedBuffer
	exited chan struct{} // closed when the process has exited
	code   int

	// reading is held while the window does not read its stdout (a frozen
	// editor): pause and resume.
	reading sync.Mutex
}

// pause stops the window reading what the server sends, as a frozen or
// suspended editor does; resume reads again.
func (w *window) pause()  { w.reading.Lock() }
func (w *window) resume() { w.reading.Unlock() }

// gated reads for w while it is not paused.
type gated struct {
	io.ReadCloser
	w *window
}

func (g gated) Read(p []byte) (int, error) {
	// Waits while the window is paused; holds nothing while reading.
	g.w.reading.Lock()
	//lint:ignore SA2001 the empty section is the wait for resume
	g.w.reading.Unlock()
	return g.ReadCloser.Read(p)
}

// daemonEnv is the environment of windows on store with model srv.
func daemonEnv(store string, srv *scripted.Server, extra ...string) []string {
	return append([]string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=sk-window", "AGENT_LSP_MODEL=scripted",
		"AGENT_LSP_STORE=" + store, "AGENT_LSP_DAEMON=on", "AGENT_LSP_DAEMON_IDLE=2s", "AGENT_LSP_LANDLOCK=false"}, extra...)
}

// openWindow starts bin (the test binary when "") with env and initializes
// it on folders; opts change the command before it starts.
func openWindow(t *testing.T, bin string, env []string, folders map[string]string, opts ...func(*exec.Cmd)) *window {
	t.Helper()
	w := startWindow(t, bin, env, opts...)
	var fs []map[string]string
	for name, dir := range folders {
		fs = append(fs, map[string]string{"uri": string(uri.File(dir)), "name": name})
	}
	if err := w.call("initialize", map[string]any{"processId": nil, "workspaceFolders": fs, "capabilities": map[string]any{}}, nil); err != nil {
		t.Fatalf("initialize: %v\n%s", err, w.stderr)
	}
	w.conn.Notify(context.Background(), "initialized", map[string]any{})
	return w
}

func startWindow(t *testing.T, bin string, env []string, opts ...func(*exec.Cmd)) *window {
	t.Helper()
	if bin == "" {
		bin = binary
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	for _, o := range opts {
		o(cmd)
	}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	w := &window{t: t, cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		w.code = cmd.ProcessState.ExitCode()
		close(w.exited)
	}()
	w.conn = lsptest.New(lsptest.Stream(gated{stdout, w}, stdin))
	w.conn.Handle("window/showMessageRequest", lsptest.Reply(map[string]string{"title": "Allow once"}))
	t.Cleanup(func() {
		cmd.Process.Kill()
		w.conn.Close()
		<-w.exited
	})
	return w
}

// lockedBuffer is a process's stderr that a test may read while the
// process still writes it.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (w *window) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // only to catch a hang
	defer cancel()
	return w.conn.Call(ctx, method, params, result)
}

func (w *window) command(name string, args, result any) error {
	return w.call("workspace/executeCommand", map[string]any{"command": name, "arguments": []any{args}}, result)
}

// close ends the window as an editor does: shutdown, exit.
func (w *window) close() int {
	w.call("shutdown", nil, nil)
	w.conn.Notify(context.Background(), "exit", nil)
	return w.wait()
}

// wait waits (generously bounded) for the process to exit and returns its code.
func (w *window) wait() int {
	select {
	case <-w.exited:
		return w.code
	case <-time.After(30 * time.Second):
		w.t.Fatalf("the server did not exit\n%s", w.stderr)
		return -1
	}
}

// eventsOf returns the window's events of session.
func (w *window) eventsOf(session string) []map[string]any {
	var out []map[string]any
	for _, e := range w.conn.Events() {
		if e["session"] == session {
			out = append(out, e)
		}
	}
	return out
}

type daemonStatus struct {
	Pid         int    `json:"pid"`
	Socket      string `json:"socket"`
	Store       string `json:"store"`
	Version     string `json:"version"`
	Connections int    `json:"connections"`
	Running     int    `json:"running"`
}

// status runs agent-lsp daemon status --json; ok false when none runs.
func status(t *testing.T, store string) (daemonStatus, bool) {
	t.Helper()
	out, err := exec.Command(binary, "daemon", "status", "--json", "--store", store).Output()
	var st daemonStatus
	if err != nil {
		return st, false
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status: %v: %s", err, out)
	}
	return st, true
}

// stopDaemon stops the store's daemon at the end of a test.
func stopDaemon(t *testing.T, store string) {
	t.Cleanup(func() { exec.Command(binary, "daemon", "stop", "--now", "--store", store).Run() })
}

// eventually waits (generously bounded) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// daemonsOf lists the pids of daemon processes serving store.
func daemonsOf(store string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 3 && args[1] == "daemon" && strings.Contains(string(b), store) {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); !strings.Contains(string(st), ") Z ") {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func sample(t *testing.T) string {
	ws := filepath.Join(t.TempDir(), "sample")
	os.CopyFS(ws, os.DirFS("../../testdata/workspaces/sample"))
	return ws
}

func model(t *testing.T, script scripted.Script) *scripted.Server {
	srv, err := scripted.Start("127.0.0.1:0", script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

type sessionRow struct {
	Session string `json:"session"`
	Status  string `json:"status"`
	Project string `json:"project"`
	Root    string `json:"root"`
}

type result struct {
	Session  string `json:"session"`
	Status   string `json:"status"`
	Reply    string `json:"reply"`
	Position int    `json:"position"`
	Error    string `json:"error"`
}

// Two windows and the command line on one store: one daemon serves them
// all, each reaches only its own model endpoint, and every one of them sees
// every session.
func TestDaemonSharedByWindowsAndCLI(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	srvA := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "answer from A"}}})
	srvB := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "answer from B"}}})
	srvC := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "answer from the CLI"}}})
	ws := sample(t)
	a := openWindow(t, "", daemonEnv(store, srvA), map[string]string{"sample": ws})
	b := openWindow(t, "", daemonEnv(store, srvB), map[string]string{"sample": ws})

	var ra, rb result
	if err := a.command("agent.run", map[string]any{"prompt": "hello from A"}, &ra); err != nil || ra.Reply != "answer from A" {
		t.Fatalf("A: %+v %v", ra, err)
	}
	if err := b.command("agent.run", map[string]any{"prompt": "hello from B"}, &rb); err != nil || rb.Reply != "answer from B" {
		t.Fatalf("B: %+v %v", rb, err)
	}
	if len(srvA.Requests()) != 1 || len(srvB.Requests()) != 1 {
		t.Fatalf("each window must reach only its own model: A got %d requests, B %d", len(srvA.Requests()), len(srvB.Requests()))
	}
	st, ok := status(t, store)
	if !ok || st.Connections != 2 || len(daemonsOf(store)) != 1 {
		t.Fatalf("status %+v (running: %v), daemons %v", st, ok, daemonsOf(store))
	}

	// The command line, while the editors are connected.
	cli := exec.Command(binary, "run", "--workspace", ws, "--json", "hello from the CLI")
	cli.Env = append(os.Environ(), daemonEnv(store, srvC)...)
	out, err := cli.Output()
	if err != nil || !strings.Contains(string(out), "answer from the CLI") {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if len(srvC.Requests()) != 1 || len(srvA.Requests()) != 1 || len(srvB.Requests()) != 1 {
		t.Fatal("the CLI's run reached another endpoint than its own")
	}
	list := exec.Command(binary, "sessions", "--store", store)
	list.Env = append(os.Environ(), "AGENT_LSP_DAEMON=on")
	out, err = list.CombinedOutput()
	if err != nil || strings.Count(string(out), "s-") != 3 {
		t.Fatalf("sessions while editors run: %v\n%s", err, out)
	}
	for _, w := range []*window{a, b} {
		var rows []sessionRow
		if err := w.command("agent.sessions", map[string]any{}, &rows); err != nil || len(rows) != 3 {
			t.Fatalf("agent.sessions: %+v %v", rows, err)
		}
		for _, r := range rows {
			if r.Status != "done" || r.Root != ws {
				t.Errorf("session %+v", r)
			}
		}
	}
	if code := a.close(); code != 0 {
		t.Fatalf("window A exited %d: %s", code, a.stderr)
	}
	if st, _ := status(t, store); st.Connections != 1 {
		t.Fatalf("after A closed: %+v", st)
	}
}

// Eight servers started at once end up with one daemon.
func TestDaemonEightStartsAtOnce(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	srv := model(t, scripted.Script{})
	ws := sample(t)
	var wg sync.WaitGroup
	windows := make([]*window, 8)
	for i := range windows {
		wg.Go(func() { windows[i] = openWindow(t, "", daemonEnv(store, srv), map[string]string{"sample": ws}) })
	}
	wg.Wait()
	if pids := daemonsOf(store); len(pids) != 1 {
		t.Fatalf("%d daemons: %v", len(pids), pids)
	}
	if st, _ := status(t, store); st.Connections != 8 {
		t.Fatalf("status: %+v", st)
	}
}

// The daemon exits once no connection has been open for its idle time.
func TestDaemonIdleExit(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	srv := model(t, scripted.Script{})
	w := openWindow(t, "", daemonEnv(store, srv, "AGENT_LSP_DAEMON_IDLE=1s"), map[string]string{"sample": sample(t)})
	st, ok := status(t, store)
	if !ok {
		t.Fatal("no daemon")
	}
	if code := w.close(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	eventually(t, "the idle daemon to exit", func() bool { _, running := status(t, store); return !running })
	eventually(t, fmt.Sprintf("daemon %d to end", st.Pid), func() bool { return len(daemonsOf(store)) == 0 })
	if _, err := os.Stat(store + ".daemon"); !os.IsNotExist(err) {
		t.Fatalf("the sidecar outlived the daemon: %v", err)
	}
}

func withID(c scripted.ToolCall, id string) scripted.ToolCall { c.ID = id; return c }

// runAsync starts agent.run in w and returns a channel with its result.
func runAsync(w *window, args map[string]any) <-chan result {
	ch := make(chan result, 1)
	go func() {
		var r result
		if err := w.command("agent.run", args, &r); err != nil {
			r.Status = "error: " + err.Error()
		}
		ch <- r
	}()
	return ch
}

// sessionStarted waits for w's first run.start event and returns its session.
func sessionStarted(t *testing.T, w *window) string {
	t.Helper()
	var session string
	eventually(t, "the run to start", func() bool {
		for _, e := range w.conn.Events() {
			if e["type"] == "run.start" {
				session, _ = e["session"].(string)
				return true
			}
		}
		return false
	})
	return session
}

// hasEvent reports whether w received an event of typ for session.
func hasEvent(w *window, session, typ string) bool {
	for _, e := range w.eventsOf(session) {
		if e["type"] == typ {
			return true
		}
	}
	return false
}

// A daemon killed mid-run: the window's server exits at once with a clear
// message; the next window starts a fresh daemon, sees the session
// interrupted and resumes it to the end.
func TestDaemonKilledMidRun(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	ws := sample(t)
	read := withID(call("read_file", map[string]any{"path": "greet.go"}), "call_read")
	slow := model(t, scripted.Script{Conversations: []scripted.Conversation{{Match: "read greet.go", ByHistory: true, Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{read}},
		{Delay: scripted.Duration(time.Minute), Text: "never sent"},
	}}}})
	fast := model(t, scripted.Script{Conversations: []scripted.Conversation{{Match: "read greet.go", ByHistory: true, Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{read}},
		{Text: "greet.go greets"},
	}}}})
	a := openWindow(t, "", daemonEnv(store, slow, "AGENT_LSP_DURABILITY=sync"), map[string]string{"sample": ws})
	runAsync(a, map[string]any{"prompt": "read greet.go"})
	session := sessionStarted(t, a)
	eventually(t, "the read to end", func() bool { return hasEvent(a, session, "tool.end") })
	st, ok := status(t, store)
	if !ok {
		t.Fatal("no daemon")
	}
	syscall.Kill(st.Pid, syscall.SIGKILL)
	if code := a.wait(); code == 0 || !strings.Contains(a.stderr.String(), "ended the connection") {
		t.Fatalf("the window's server exited %d after its daemon died: %s", code, a.stderr)
	}

	b := openWindow(t, "", daemonEnv(store, fast), map[string]string{"sample": ws})
	if st2, _ := status(t, store); st2.Pid == st.Pid {
		t.Fatal("no fresh daemon")
	}
	var rows []sessionRow
	if err := b.command("agent.sessions", map[string]any{}, &rows); err != nil || len(rows) != 1 || rows[0].Status != "interrupted" {
		t.Fatalf("sessions after the kill: %+v %v", rows, err)
	}
	var r result
	if err := b.command("agent.resume", map[string]any{"session": session}, &r); err != nil || r.Status != "done" || r.Reply != "greet.go greets" {
		t.Fatalf("resume: %+v %v", r, err)
	}
}

// When a window's server goes away mid-run (the editor closed, or the
// process was killed), the daemon cancels that connection's run cleanly: it
// is stored as cancelled, with no tool call left unanswered, and resumes in
// another window. The daemon keeps serving.
func TestDaemonClosedConnectionCancelsItsRuns(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	ws := sample(t)
	sleep := withID(call("run_command", map[string]any{"command": "sleep 60"}), "call_sleep")
	script := func(answer string) scripted.Script {
		return scripted.Script{Conversations: []scripted.Conversation{{Match: "sleep", ByHistory: true, Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{sleep}}, {Text: answer},
		}}}}
	}
	// A long idle time: the daemon must outlive the closed connection by
	// design, not because the check below came within the usual 2 s (it
	// did not on a loaded machine).
	a := openWindow(t, "", daemonEnv(store, model(t, script("slept")), "AGENT_LSP_DAEMON_IDLE=5m"), map[string]string{"sample": ws})
	runAsync(a, map[string]any{"prompt": "sleep"})
	session := sessionStarted(t, a)
	eventually(t, "the command to start", func() bool { return hasEvent(a, session, "tool.start") })
	st, _ := status(t, store)
	a.cmd.Process.Kill()
	a.wait()
	var out []byte
	t.Cleanup(func() {
		if t.Failed() {
			if st, ok := status(t, store); ok {
				syscall.Kill(st.Pid, syscall.SIGQUIT) // its goroutines, into its log
				time.Sleep(time.Second)
			}
			log, _ := os.ReadFile(store + ".daemon.log")
			t.Logf("sessions:\n%s\ndaemon log:\n%s\nevents: %v", out, log, a.eventsOf(session))
		}
	})
	eventually(t, "the run to be cancelled", func() bool {
		out, _ = exec.Command(binary, "sessions", "--store", store).CombinedOutput()
		return strings.Contains(string(out), "cancelled")
	})
	if st2, ok := status(t, store); !ok || st2.Pid != st.Pid {
		t.Fatalf("the daemon did not survive a closed connection: %+v", st2)
	}
	b := openWindow(t, "", daemonEnv(store, model(t, script("resumed"))), map[string]string{"sample": ws})
	var r result
	if err := b.command("agent.run", map[string]any{"session": session, "prompt": "go on"}, &r); err != nil || r.Status != "done" {
		t.Fatalf("continue: %+v %v", r, err)
	}
}

// A session running in one window is busy in the others: a prompt from
// another window is queued into its run, that window receives the session's
// events with the same sequence numbers, and a window without the session's
// folder is told to open it.
func TestDaemonSessionBusyAcrossWindows(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	ws := sample(t)
	srvA := model(t, scripted.Script{Turns: []scripted.Turn{
		{Delay: scripted.Duration(8 * time.Second), ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}},
		{Text: "read it, and covered the follow-up"},
	}})
	srvB := model(t, scripted.Script{})
	a := openWindow(t, "", daemonEnv(store, srvA), map[string]string{"sample": ws})
	b := openWindow(t, "", daemonEnv(store, srvB), map[string]string{"sample": ws})
	other := openWindow(t, "", daemonEnv(store, srvB), map[string]string{"elsewhere": t.TempDir()})
	done := runAsync(a, map[string]any{"prompt": "read greet.go"})
	session := sessionStarted(t, a)

	var q result
	if err := b.command("agent.run", map[string]any{"session": session, "prompt": "and say hello"}, &q); err != nil || q.Status != "queued" || q.Position != 1 {
		t.Fatalf("a prompt from another window: %+v %v", q, err)
	}
	err := other.command("agent.run", map[string]any{"session": session, "prompt": "take over"}, &q)
	if err == nil || !strings.Contains(err.Error(), "open folder "+ws) {
		t.Fatalf("a window without the folder: %v", err)
	}
	if r := <-done; r.Status != "done" || r.Reply != "read it, and covered the follow-up" {
		t.Fatalf("the run: %+v", r)
	}
	if len(srvB.Requests()) != 0 {
		t.Fatal("the queued prompt ran on the other window's model")
	}
	eventually(t, "B to get the run's end", func() bool { return hasEvent(b, session, "run.end") })
	seqs := map[string]float64{}
	for _, e := range a.eventsOf(session) {
		seqs[fmt.Sprint(e["type"], e["seq"])] = e["seq"].(float64)
	}
	for _, e := range b.eventsOf(session) {
		if _, ok := seqs[fmt.Sprint(e["type"], e["seq"])]; !ok {
			t.Errorf("B's event %v seq %v is not A's: one sequence per session", e["type"], e["seq"])
		}
	}
	if !hasEvent(b, session, "message.queued") {
		t.Error("B did not see its prompt queued")
	}
}

// A window that follows a session running in another window (it queued a
// prompt into it) and then stops reading, as a frozen or suspended editor
// does, never holds the run: the run ends while megabytes of its events
// wait for that window, which gets them once it reads again.
func TestDaemonFollowerThatDoesNotRead(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	ws := sample(t)
	line := strings.Repeat("a line of the big file, read again and again by the agent\n", 300) // 16 KB, the tool output's size
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	turns := []scripted.Turn{{Delay: scripted.Duration(3 * time.Second), ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "big.txt"})}}}
	for range 80 { // 1.3 MB of tool results, past the pipes' and sockets' buffers (160 messages: within the window, no summary)
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "big.txt"})}})
	}
	turns = append(turns, scripted.Turn{Text: "read it all"})
	srvA := model(t, scripted.Script{Turns: turns})
	a := startWindow(t, "", daemonEnv(store, srvA, "AGENT_LSP_CONTEXT_TOKENS=1000000"))
	folders := []map[string]string{{"uri": string(uri.File(ws)), "name": "sample"}}
	if err := a.call("initialize", map[string]any{"processId": nil, "workspaceFolders": folders, "capabilities": map[string]any{},
		"initializationOptions": map[string]any{"maxSteps": 1000}}, nil); err != nil {
		t.Fatalf("initialize: %v\n%s", err, a.stderr)
	}
	a.conn.Notify(context.Background(), "initialized", map[string]any{})
	b := openWindow(t, "", daemonEnv(store, model(t, scripted.Script{})), map[string]string{"sample": ws})
	done := runAsync(a, map[string]any{"prompt": "read big.txt, many times"})
	session := sessionStarted(t, a)
	var q result
	if err := b.command("agent.run", map[string]any{"session": session, "prompt": "and then stop"}, &q); err != nil || q.Status != "queued" {
		// B's stderr says whether it reached the daemon or served itself.
		t.Fatalf("a prompt from another window: %+v %v\nB's stderr:\n%s", q, err, b.stderr)
	}
	b.pause()
	paused := true
	defer func() {
		if paused {
			b.resume()
		}
	}()
	select {
	case r := <-done:
		if r.Status != "done" || r.Reply != "read it all" {
			t.Fatalf("the run: %+v", r)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run stalled behind a window that does not read its events")
	}
	b.resume()
	paused = false
	eventually(t, "B to get the run's end", func() bool { return hasEvent(b, session, "run.end") })
	var rows []sessionRow
	if err := b.command("agent.sessions", map[string]any{}, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("B after reading again: %+v %v", rows, err)
	}
}

// Sessions an earlier version kept in a sibling file (when the store was
// locked by another window) are imported once, when the daemon opens the
// store: they are listed and read like any other.
func TestDaemonImportsSiblingStores(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "sessions.db")
	sibling := filepath.Join(dir, "sessions.1a2b3c4d.db")
	stopDaemon(t, store)
	ws := sample(t)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "kept in the sibling"}}})
	old := exec.Command(binary, "run", "--no-daemon", "--workspace", ws, "remember me")
	old.Env = append(os.Environ(), daemonEnv(sibling, srv)...)
	if out, err := old.CombinedOutput(); err != nil {
		t.Fatalf("writing the sibling: %v\n%s", err, out)
	}
	w := openWindow(t, "", daemonEnv(store, srv), map[string]string{"sample": ws})
	var rows []sessionRow
	if err := w.command("agent.sessions", map[string]any{}, &rows); err != nil || len(rows) != 1 || rows[0].Status != "done" {
		t.Fatalf("sessions: %+v %v", rows, err)
	}
	var detail struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := w.command("agent.session", map[string]any{"session": rows[0].Session}, &detail); err != nil ||
		len(detail.Messages) != 2 || detail.Messages[1].Content != "kept in the sibling" {
		t.Fatalf("session: %+v %v", detail, err)
	}
	if _, err := os.Stat(sibling + ".imported"); err != nil {
		t.Fatalf("the sibling was not marked imported: %v", err)
	}
	if _, err := os.Stat(sibling); !os.IsNotExist(err) {
		t.Fatal("the sibling is still there: it would be imported again")
	}
}

// A headless run when no daemon runs works in-process and serves the
// daemon's address while it lives: the store stays reachable (status,
// sessions); afterwards the address is gone. The daemon never keeps an
// environment of its own: the first window's key is not in it.
func TestHeadlessServesTheDaemonAddress(t *testing.T) {
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	ws := sample(t)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Delay: scripted.Duration(3 * time.Second), Text: "slowly done"}}})
	run := exec.Command(binary, "run", "--workspace", ws, "take your time")
	run.Env = append(os.Environ(), daemonEnv(store, srv)...)
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	var st daemonStatus
	eventually(t, "the run to serve the store's address", func() bool {
		var ok bool
		st, ok = status(t, store)
		return ok
	})
	if st.Pid != run.Process.Pid {
		t.Fatalf("status %+v: want the run's own pid %d", st, run.Process.Pid)
	}
	if err := run.Wait(); err != nil || !strings.Contains(out.String(), "slowly done") {
		t.Fatalf("run: %v\n%s", err, &out)
	}
	if _, ok := status(t, store); ok {
		t.Fatal("the address outlived the run")
	}

	w := openWindow(t, "", daemonEnv(store, srv), map[string]string{"sample": ws})
	st, _ = status(t, store)
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", st.Pid))
	if err != nil || bytes.Contains(environ, []byte("sk-window")) || bytes.Contains(environ, []byte("OPENAI")) {
		t.Fatalf("the daemon's environment: %q %v", environ, err)
	}
	var rows []sessionRow
	if err := w.command("agent.sessions", map[string]any{}, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("sessions: %+v %v", rows, err)
	}
}

// A relative --store names the file in the working directory, in-process
// and through the daemon alike (the demo runs with one).
func TestRelativeStore(t *testing.T) {
	dir := t.TempDir()
	ws := sample(t)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "first"}, {Text: "second"}}})
	store := filepath.Join(dir, "rel", "s.db")
	stopDaemon(t, store)
	run := func() string {
		cmd := exec.Command(binary, "run", "--store", "rel/s.db", "--workspace", ws, "hello")
		cmd.Env = append(os.Environ(), daemonEnv("", srv)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(); !strings.Contains(out, "first") {
		t.Fatal(out)
	}
	w := openWindow(t, "", daemonEnv(store, srv), map[string]string{"sample": ws}) // a daemon now owns it
	if out := run(); !strings.Contains(out, "second") {
		t.Fatal(out)
	}
	var rows []sessionRow
	if err := w.command("agent.sessions", map[string]any{}, &rows); err != nil || len(rows) != 2 {
		t.Fatalf("sessions: %+v %v", rows, err)
	}
}

// The forwarder an editor starts passes the editor's streams to the daemon,
// which serves them itself: a window's messages (a large file opened, a
// run's events) are not copied through the forwarder, which reads only the
// initialize request and writes nothing to the editor.
func TestDaemonServesTheEditorsStreams(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the handoff is Linux's (elsewhere the forwarder copies)")
	}
	store := filepath.Join(t.TempDir(), "sessions.db")
	stopDaemon(t, store)
	ws := sample(t)
	w := openWindow(t, "", daemonEnv(store, model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}}, {Text: "read"},
	}})), map[string]string{"sample": ws})
	big := strings.Repeat("// a long line of a large file, sent to the server as the editor opens it\n", 1<<15) // 2.4 MB
	w.conn.Notify(context.Background(), "textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": string(uri.File(filepath.Join(ws, "big.go"))), "languageId": "go", "version": 1, "text": big}})
	var r result
	if err := w.command("agent.run", map[string]any{"prompt": "read greet.go"}, &r); err != nil || r.Status != "done" {
		t.Fatalf("run: %+v %v\n%s", r, err, w.stderr)
	}
	if !hasEvent(w, r.Session, "tool.end") {
		t.Fatalf("the run's events did not reach the editor: %v", w.eventsOf(r.Session))
	}
	procIO, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", w.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(string(procIO), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			counts[k], _ = strconv.Atoi(v)
		}
	}
	// rchar and wchar count every read and write the forwarder made: its
	// handshake and the initialize request, a few kilobytes.
	if counts["rchar"] > 256<<10 || counts["wchar"] > 256<<10 {
		t.Errorf("the forwarder copied the window's messages: read %d bytes, wrote %d (a %d-byte file was opened)", counts["rchar"], counts["wchar"], len(big))
	}
	if code := w.close(); code != 0 {
		t.Errorf("exit code %d after shutdown and exit\n%s", code, w.stderr)
	}
}
