package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangBound only catches hangs; nothing is timed against it.
const hangBound = 60 * time.Second

// testServerPath is the test server built by TestMain.
var testServerPath string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "agent-lsp-mcp-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	testServerPath = filepath.Join(dir, "testserver")
	build := exec.Command("go", "build", "-o", testServerPath, "../../testdata/mcp/testserver")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test server: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// logBook collects log lines, from the Manager and from an HTTP server's stderr.
type logBook struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (l *logBook) add(server, line string) {
	l.mu.Lock()
	l.lines = append(l.lines, server+": "+line)
	l.mu.Unlock()
}

func (l *logBook) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *logBook) has(substr string) bool {
	return strings.Contains(l.String(), substr)
}

// waitFor waits until a line contains substr.
func (l *logBook) waitFor(t *testing.T, substr string) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for !l.has(substr) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q; the log:\n%s", substr, l)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cleanEnv is a clean command environment: PATH and HOME only.
func cleanEnv(t *testing.T) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
}

// stdioDef defines the test server over stdio.
func stdioDef(t *testing.T, logs *logBook) Definition {
	return Definition{Name: "test", Source: SourceUser, Transport: TransportStdio, Command: testServerPath}
}

// httpDef starts the test server on HTTP for the test (its stderr goes to
// logs) and defines it.
func httpDef(t *testing.T, logs *logBook) Definition {
	t.Helper()
	url, _ := startHTTPServer(t, logs, "127.0.0.1:0")
	return Definition{Name: "test", Source: SourceEditor, Transport: TransportHTTP, URL: url, Headers: map[string]string{"X-Test": "header-value"}}
}

// startHTTPServer starts the test server on HTTP at addr until the end of
// the test, and returns its URL and a function that kills it.
func startHTTPServer(t *testing.T, logs *logBook, addr string) (url string, kill func()) {
	t.Helper()
	cmd := exec.Command(testServerPath, "-http", addr)
	cmd.Env = cleanEnv(t)
	cmd.Stderr = &lineWriter{log: func(line string) { logs.add("http", line) }}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the test server's address: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("unexpected first line %q", line)
	}
	return url, kill
}

// transports are the ways to reach the test server.
var transports = []struct {
	name string
	def  func(*testing.T, *logBook) Definition
}{
	{"stdio", stdioDef},
	{"http", httpDef},
}

// newManager returns a Manager of defs logging to logs, closed at the end
// of the test.
func newManager(t *testing.T, logs *logBook, opts Options, defs ...Definition) *Manager {
	t.Helper()
	if opts.Env == nil {
		opts.Env = cleanEnv(t)
	}
	opts.Log = logs.add
	m, err := NewManager(defs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		done := make(chan error, 1)
		go func() { done <- m.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		case <-time.After(hangBound):
			t.Errorf("Close hangs; the log:\n%s", logs)
		}
	})
	return m
}

// testCtx is bounded to catch hangs.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	t.Cleanup(cancel)
	return ctx
}

func toolNames(t *testing.T, m *Manager, ctx context.Context) []string {
	t.Helper()
	tools, err := m.Tools(ctx, "test")
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// call calls a tool of "test" and returns its text.
func call(t *testing.T, m *Manager, ctx context.Context, tool string, args any) (string, bool) {
	t.Helper()
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Call(ctx, "test", tool, data)
	if err != nil {
		t.Fatalf("Call %s: %v", tool, err)
	}
	return ResultText(res, 0)
}

func statusOf(m *Manager, name string) Status {
	for _, st := range m.Status() {
		if st.Name == name {
			return st
		}
	}
	return Status{}
}

func TestManagerToolsAndCalls(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			logs := &logBook{}
			m := newManager(t, logs, Options{}, tr.def(t, logs))
			ctx := testCtx(t)
			if st := statusOf(m, "test"); st.State != StateStopped || st.Tools != -1 {
				t.Errorf("before use: %+v, want stopped, no listing", st)
			}
			want := []string{"add_tool", "crash", "cwd", "echo", "env", "fail", "image", "peek", "slow"}
			if got := toolNames(t, m, ctx); !slices.Equal(got, want) {
				t.Errorf("tools %v, want %v", got, want)
			}
			if st := statusOf(m, "test"); st.State != StateRunning || st.Tools != len(want) || st.Starts != 1 {
				t.Errorf("status %+v, want running with %d tools, 1 start", st, len(want))
			}
			for _, c := range []struct {
				tool    string
				args    any
				want    string
				isError bool
			}{
				{"echo", map[string]any{"text": "hello"}, "hello", false},
				{"fail", nil, "failed on purpose", true},
				{"image", nil, "a picture:\n[image: image/png, 1234 bytes, not shown]", false},
			} {
				text, isError := call(t, m, ctx, c.tool, c.args)
				if text != c.want || isError != c.isError {
					t.Errorf("%s: %q (error %v), want %q (error %v)", c.tool, text, isError, c.want, c.isError)
				}
			}
			res, err := m.Call(ctx, "test", "no_such_tool", nil)
			if err == nil && !res.IsError {
				t.Errorf("an unknown tool: %+v, want an error", res)
			}
			if tr.name == "stdio" {
				logs.waitFor(t, "test: testserver: started")
			} else {
				logs.waitFor(t, "header X-Test: header-value")
			}
		})
	}
}

func TestManagerCancel(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			logs := &logBook{}
			m := newManager(t, logs, Options{}, tr.def(t, logs))
			ctx, cancel := context.WithCancel(testCtx(t))
			done := make(chan error, 1)
			go func() {
				_, err := m.Call(ctx, "test", "slow", json.RawMessage(`{"seconds": 3600}`))
				done <- err
			}()
			logs.waitFor(t, "slow: started")
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("a cancelled call: %v, want context.Canceled", err)
				}
			case <-time.After(hangBound):
				t.Fatal("a cancelled call hangs")
			}
			logs.waitFor(t, "slow: cancelled")
			if text, _ := call(t, m, testCtx(t), "echo", map[string]any{"text": "still there"}); text != "still there" {
				t.Errorf("after the cancellation: %q", text)
			}
		})
	}
}

func TestManagerTimeout(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			logs := &logBook{}
			m := newManager(t, logs, Options{CallTimeout: 2 * time.Second}, tr.def(t, logs))
			ctx := testCtx(t)
			toolNames(t, m, ctx) // started
			_, err := m.Call(ctx, "test", "slow", json.RawMessage(`{"seconds": 3600}`))
			if err == nil || !strings.Contains(err.Error(), "no answer within 2s") {
				t.Fatalf("a call past the timeout: %v, want a timeout", err)
			}
			logs.waitFor(t, "slow: cancelled")
		})
	}
}

func TestManagerListChanged(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			logs := &logBook{}
			var changes atomic.Int32
			m := newManager(t, logs, Options{OnChange: func(server string) {
				if server == "test" {
					changes.Add(1)
				}
			}}, tr.def(t, logs))
			ctx := testCtx(t)
			if got := toolNames(t, m, ctx); slices.Contains(got, "added") {
				t.Fatalf("tools %v before add_tool", got)
			}
			if text, _ := call(t, m, ctx, "add_tool", map[string]any{"name": "added"}); text != "added added" {
				t.Fatalf("add_tool: %q", text)
			}
			before := changes.Load()
			if before < 2 {
				t.Errorf("OnChange called %d times for starting and running", before)
			}
			logs.waitFor(t, "[mcp] tools/list_changed")
			for deadline := time.Now().Add(hangBound); changes.Load() == before; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("OnChange not called for list_changed")
				}
			}
			if got := toolNames(t, m, ctx); !slices.Contains(got, "added") {
				t.Errorf("tools %v after list_changed, want added", got)
			}
			if st := statusOf(m, "test"); st.Tools != 10 {
				t.Errorf("status %+v, want 10 tools", st)
			}
			if text, _ := call(t, m, ctx, "added", nil); text != "I am added" {
				t.Errorf("the added tool: %q", text)
			}
		})
	}
}

func TestManagerCrashRestarts(t *testing.T) {
	logs := &logBook{}
	m := newManager(t, logs, Options{}, stdioDef(t, logs))
	ctx := testCtx(t)
	if text, _ := call(t, m, ctx, "echo", map[string]any{"text": "before"}); text != "before" {
		t.Fatalf("echo: %q", text)
	}
	if res, err := m.Call(ctx, "test", "crash", nil); err == nil {
		t.Fatalf("a call that crashes the server: %+v, want an error", res)
	} else if !strings.Contains(err.Error(), `calling "crash"`) {
		t.Errorf("error %v, want one naming the call", err)
	}
	// The failed call returns once the exit is recorded: a call right after
	// it starts the server again rather than meeting the closing session
	// ("client is closing", seen in TestMCPCancelAndCrash under load).
	if st := statusOf(m, "test"); st.State != StateFailed || st.Reason == "" {
		t.Errorf("after the crash: %+v, want failed with a reason", st)
	}
	logs.waitFor(t, "[mcp] the server exited")
	logs.waitFor(t, "testserver: crashing") // its stderr up to the end
	if text, _ := call(t, m, ctx, "echo", map[string]any{"text": "after"}); text != "after" {
		t.Errorf("echo after the restart: %q", text)
	}
	if st := statusOf(m, "test"); st.State != StateRunning || st.Starts != 2 {
		t.Errorf("after the restart: %+v, want running, 2 starts", st)
	}
}

func TestManagerEnvironmentIsClean(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	logs := &logBook{}
	def := stdioDef(t, logs)
	def.Env = map[string]string{"GIVEN": "by the definition", "HOME": "/overridden"}
	m := newManager(t, logs, Options{
		Prepare: func(_ Definition, cmd *exec.Cmd) error {
			cmd.Env = append(cmd.Env, "PREPARED=yes")
			return nil
		},
	}, def)
	ctx := testCtx(t)
	for _, c := range []struct{ name, want string }{
		{"OPENAI_API_KEY", "OPENAI_API_KEY is not set"},
		{"GIVEN", "GIVEN=by the definition"},
		{"HOME", "HOME=/overridden"},
		{"PREPARED", "PREPARED=yes"},
		{"PATH", "PATH=" + os.Getenv("PATH")},
	} {
		if text, _ := call(t, m, ctx, "env", map[string]any{"name": c.name}); text != c.want {
			t.Errorf("env %s: %q, want %q", c.name, text, c.want)
		}
	}
}

func TestManagerCommandLookup(t *testing.T) {
	dir := filepath.Dir(testServerPath)
	for _, c := range []struct {
		name, command, path, wantErr string
	}{
		{"in the given PATH", "testserver", "/nonexistent:" + dir, ""},
		{"not in the given PATH", "testserver", "/nonexistent", "not found in the PATH"},
		{"no such file", "/nonexistent/testserver", dir, "could not start"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := &logBook{}
			def := Definition{Name: "test", Source: SourceUser, Transport: TransportStdio, Command: c.command}
			m := newManager(t, logs, Options{Env: []string{"PATH=" + c.path}, Backoff: time.Hour, CallTimeout: 20 * time.Second}, def)
			_, err := m.Call(testCtx(t), "test", "echo", json.RawMessage(`{"text":"x"}`))
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Call: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Call: %v, want an error with %q", err, c.wantErr)
			}
			st := statusOf(m, "test")
			if st.State != StateFailed || !strings.Contains(st.Reason, c.wantErr) || st.RetryAt.IsZero() {
				t.Errorf("status %+v, want failed with %q and a retry time", st, c.wantErr)
			}
			// Within the backoff (an hour), a call fails at once with the reason.
			_, err = m.Call(testCtx(t), "test", "echo", nil)
			if err == nil || !strings.Contains(err.Error(), "next start in") || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("a call within the backoff: %v, want the reason and the next start", err)
			}
		})
	}
}

func TestManagerConcurrentFirstCalls(t *testing.T) {
	logs := &logBook{}
	m := newManager(t, logs, Options{}, stdioDef(t, logs))
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			want := fmt.Sprint("call ", i)
			res, err := m.Call(ctx, "test", "echo", json.RawMessage(fmt.Sprintf(`{"text":%q}`, want)))
			if err != nil {
				errs <- err
				return
			}
			if text, _ := ResultText(res, 0); text != want {
				errs <- fmt.Errorf("got %q, want %q", text, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := statusOf(m, "test"); st.Starts != 1 {
		t.Errorf("status %+v, want one start for concurrent first calls", st)
	}
}

func TestManagerStopAndClose(t *testing.T) {
	logs := &logBook{}
	m := newManager(t, logs, Options{}, stdioDef(t, logs))
	ctx := testCtx(t)
	call(t, m, ctx, "echo", map[string]any{"text": "x"})
	if err := m.Stop("test"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if st := statusOf(m, "test"); st.State != StateStopped {
		t.Errorf("after Stop: %+v", st)
	}
	call(t, m, ctx, "echo", map[string]any{"text": "x"})
	if st := statusOf(m, "test"); st.State != StateRunning || st.Starts != 2 {
		t.Errorf("after a call following Stop: %+v, want running, 2 starts", st)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if st := statusOf(m, "test"); st.State != StateStopped {
		t.Errorf("after Close: %+v", st)
	}
	if _, err := m.Call(ctx, "test", "echo", nil); err == nil || !strings.Contains(err.Error(), "shut down") {
		t.Errorf("a call after Close: %v, want an error", err)
	}
	if _, err := m.Call(ctx, "nope", "echo", nil); err == nil || !strings.Contains(err.Error(), `no server named "nope"`) {
		t.Errorf("a call of an unknown server: %v", err)
	}
}

func TestManagerCloseDuringCall(t *testing.T) {
	logs := &logBook{}
	m := newManager(t, logs, Options{}, stdioDef(t, logs))
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(testCtx(t), "test", "slow", json.RawMessage(`{"seconds": 3600}`))
		done <- err
	}()
	logs.waitFor(t, "slow: started")
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("a call in flight at Close succeeded")
		}
	case <-time.After(hangBound):
		t.Fatal("a call in flight at Close hangs")
	}
}

func TestNewManagerRejects(t *testing.T) {
	d := Definition{Name: "a", Transport: TransportStdio, Command: "x"}
	for _, c := range []struct {
		name string
		defs []Definition
		want string
	}{
		{"twice", []Definition{d, d}, "defined twice"},
		{"no transport", []Definition{{Name: "b"}}, "unknown transport"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewManager(c.defs, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("NewManager: %v, want %q", err, c.want)
			}
		})
	}
}

func TestManagerHTTPServerGone(t *testing.T) {
	logs := &logBook{}
	url, kill := startHTTPServer(t, logs, "127.0.0.1:0")
	m := newManager(t, logs, Options{}, Definition{Name: "test", Source: SourceUser, Transport: TransportHTTP, URL: url})
	ctx := testCtx(t)
	call(t, m, ctx, "echo", map[string]any{"text": "x"})
	kill()
	if _, err := m.Call(ctx, "test", "echo", nil); err == nil {
		t.Fatal("a call to a server that is gone succeeded")
	}
	if st := statusOf(m, "test"); st.State != StateFailed || !strings.Contains(st.Reason, "connection failed") {
		t.Errorf("status %+v, want failed", st)
	}
	// The server is back at the same address: the next call reconnects.
	startHTTPServer(t, logs, strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"))
	if text, _ := call(t, m, ctx, "echo", map[string]any{"text": "back"}); text != "back" {
		t.Errorf("echo after the server came back: %q", text)
	}
	if st := statusOf(m, "test"); st.State != StateRunning || st.Starts != 2 {
		t.Errorf("status %+v, want running, 2 starts", st)
	}
}

func TestManagerModelTools(t *testing.T) {
	logs := &logBook{}
	test := stdioDef(t, logs)
	broken := Definition{Name: "broken", Source: SourceUser, Transport: TransportStdio, Command: "/nonexistent/server"}
	m := newManager(t, logs, Options{}, test, broken)
	tools, errs := m.ModelTools(testCtx(t))
	if len(errs) != 1 || errs["broken"] == nil {
		t.Errorf("errors %v, want one for broken", errs)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		if tool.Ref.Server != "test" || tool.Name != "mcp__test__"+tool.Ref.Tool {
			t.Errorf("tool %+v", tool)
		}
	}
	if len(names) != 9 || names[0] != "mcp__test__add_tool" {
		t.Errorf("names %v", names)
	}
	if st := statusOf(m, "broken"); st.State != StateFailed {
		t.Errorf("broken: %+v", st)
	}
	if d, ok := m.Definition("broken"); !ok || d.Command != broken.Command {
		t.Errorf("Definition: %+v %v", d, ok)
	}
	if got := m.Servers(); !slices.Equal(got, []string{"broken", "test"}) {
		t.Errorf("Servers: %v", got)
	}
}

func TestManagerStartTimeout(t *testing.T) {
	logs := &logBook{}
	// sleep never answers the handshake, and ignores its closed stdin.
	def := Definition{Name: "test", Source: SourceUser, Transport: TransportStdio, Command: "sleep", Args: []string{"3600"}}
	m := newManager(t, logs, Options{StartTimeout: 500 * time.Millisecond, StopTimeout: 100 * time.Millisecond}, def)
	_, err := m.Call(testCtx(t), "test", "echo", nil)
	if err == nil || !strings.Contains(err.Error(), "could not start") {
		t.Fatalf("a server that never answers: %v, want a failed start", err)
	}
	if st := statusOf(m, "test"); st.State != StateFailed {
		t.Errorf("status %+v, want failed", st)
	}
}

func TestManagerWorkingDirectory(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	abs := t.TempDir()
	for _, c := range []struct{ name, cwd, want string }{
		{"none: the Manager's Dir", "", root},
		{"relative to the Manager's Dir", "sub", filepath.Join(root, "sub")},
		{"absolute", abs, abs},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := &logBook{}
			def := stdioDef(t, logs)
			def.Cwd = c.cwd
			m := newManager(t, logs, Options{Dir: root}, def)
			got, _ := call(t, m, testCtx(t), "cwd", nil)
			want, err := filepath.EvalSymlinks(c.want)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ = filepath.EvalSymlinks(got); got != want {
				t.Errorf("cwd %q, want %q", got, want)
			}
		})
	}
}
