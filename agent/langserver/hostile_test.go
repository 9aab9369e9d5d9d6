//go:build unix

package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// fakeProject is a Go project whose language server is the test binary
// playing a case of testdata/hostile/language-servers.json, with a secret
// beside the project and a link in it that leads there.
type fakeProject struct {
	m    *Manager
	p    *workspace.Project
	ws   *workspace.Workspace
	main string
}

func newFake(t *testing.T, name string, o Options) *fakeProject {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "app")
	os.Mkdir(root, 0o755)
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("TOP-SECRET beside the project\n"), 0o644)
	os.Symlink(dir, filepath.Join(root, "link"))
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/app\n\ngo 1.22\n"), 0o644)
	main := filepath.Join(root, "main.go")
	os.WriteFile(main, []byte("package main\n\nfunc main() {}\n"), 0o644)
	ws := workspace.New(workspace.UTF16)
	p, err := ws.Add("app", root)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := filepath.Abs(os.Args[0])
	o.Settings = Settings{"go": &Spec{Name: "fake", Command: exe, FromSettings: true}}
	o.Env = append(os.Environ(), fakeEnv+"="+name, "AGENT_LSP_FAKE_FIXTURES="+fakeFixtureDir)
	o.Log = t.Logf
	m := New(o)
	t.Cleanup(m.Close)
	return &fakeProject{m: m, p: p, ws: ws, main: main}
}

func (f *fakeProject) query(settle bool, files ...string) tools.LangQuery {
	return tools.LangQuery{Project: f.p, Files: files, Settle: settle, Read: func(ctx context.Context, path string) (string, error) {
		b, err := f.ws.ReadFile(f.p, path, workspace.MaxReadSize)
		return string(b), err
	}}
}

func (f *fakeProject) state() Status {
	for _, s := range f.m.Statuses() {
		return s
	}
	return Status{}
}

// bounded fails the test when f took longer than limit: a hostile server
// must never hold a tool call up for long.
func bounded(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > limit {
		t.Fatalf("%s took %s, over %s", what, d, limit)
	}
}

// A server that never answers initialize: the question fails once the start
// wait is over, and the server counts as failed, to be restarted later.
func TestHostileServerHangs(t *testing.T) {
	f := newFake(t, "hangs", Options{Wait: 100 * time.Millisecond, StartWait: time.Second})
	var err error
	bounded(t, 10*time.Second, "a question to a server that never initializes", func() {
		_, err = f.m.Diagnostics(context.Background(), f.query(true, f.main))
	})
	if err == nil || !strings.Contains(err.Error(), "fake") {
		t.Fatalf("no error naming the server: %v", err)
	}
	waitState(t, f, "failed")
	if _, err := f.m.Diagnostics(context.Background(), f.query(true, f.main)); err == nil || !strings.Contains(err.Error(), "restarts in") {
		t.Fatalf("a question during the backoff: %v", err)
	}
}

// A server that answers initialize and then nothing, not even reading its
// input: diagnostics come back unsettled within the wait, a request fails
// within its timeout.
func TestHostileServerHangsAfterInitialize(t *testing.T) {
	f := newFake(t, "hangs-after-initialize", Options{Wait: 100 * time.Millisecond, StartWait: 2 * time.Second, AskTimeout: 500 * time.Millisecond})
	var rep tools.LangReport
	var err error
	bounded(t, 15*time.Second, "diagnostics of a silent server", func() {
		rep, err = f.m.Diagnostics(context.Background(), f.query(true, f.main))
	})
	if err != nil || rep.Settled {
		t.Fatalf("report %+v, %v: want an unsettled report", rep, err)
	}
	bounded(t, 10*time.Second, "a request to a silent server", func() {
		_, err = f.m.Ask(context.Background(), f.query(false), tools.LangRequest{Method: tools.MethodDefinition, Path: f.main, Offset: 5})
	})
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("request: %v", err)
	}
}

// A server that exits whenever a document opens: the question fails, the
// next ones say when it restarts, and after the backoff it is started again
// (and dies again, its backoff doubling).
func TestHostileServerCrashes(t *testing.T) {
	f := newFake(t, "crashes", Options{Wait: 200 * time.Millisecond, StartWait: 5 * time.Second})
	f.m.Diagnostics(context.Background(), f.query(true, f.main))
	waitState(t, f, "failed")
	if st := f.state(); !strings.Contains(st.Error, "exit status 3") {
		t.Fatalf("status %+v", st)
	}
	_, err := f.m.Diagnostics(context.Background(), f.query(true, f.main))
	if err == nil || !strings.Contains(err.Error(), "restarts in 1s") {
		t.Fatalf("during the first backoff: %v", err)
	}
	time.Sleep(1100 * time.Millisecond)
	f.m.Diagnostics(context.Background(), f.query(true, f.main)) // restarted, and it dies again
	waitState(t, f, "failed")
	if _, err := f.m.Diagnostics(context.Background(), f.query(true, f.main)); err == nil || !strings.Contains(err.Error(), "restarts in 2s") {
		t.Fatalf("during the second backoff: %v", err)
	}
}

// A server that floods: 100,000 diagnostics in one message, then 10,000
// messages for as many files: what is kept is bounded, the answer comes in bounded time, and
// the tools' output stays within its size.
func TestHostileServerFloods(t *testing.T) {
	f := newFake(t, "floods", Options{Wait: 500 * time.Millisecond, StartWait: 20 * time.Second})
	var rep tools.LangReport
	var err error
	bounded(t, 90*time.Second, "a flood", func() {
		rep, err = f.m.Diagnostics(context.Background(), f.query(true, f.main))
	})
	if err != nil {
		t.Fatal(err)
	}
	// The flood may still be arriving (slowly under the race detector):
	// wait until the opened file's diagnostics are in and the number of
	// files stops growing.
	deadline := time.Now().Add(120 * time.Second)
	for n := -1; time.Now().Before(deadline); time.Sleep(time.Second) {
		rep, _ = f.m.Diagnostics(context.Background(), f.query(false))
		kept := 0
		for _, fd := range rep.Files {
			if fd.Path == f.main {
				kept = len(fd.Items)
			}
		}
		if kept > 0 && len(rep.Files) == n {
			break
		}
		n = len(rep.Files)
	}
	if len(rep.Files) > maxFiles {
		t.Fatalf("%d files kept", len(rep.Files))
	}
	for _, fd := range rep.Files {
		if len(fd.Items) > maxPerFile {
			t.Fatalf("%s: %d diagnostics kept", fd.Path, len(fd.Items))
		}
		if fd.Path == f.main && len(fd.Items) != maxPerFile {
			t.Fatalf("the opened file kept %d of 100,000", len(fd.Items))
		}
	}
	env := &tools.Env{Workspace: f.ws, Project: "app", Lang: &tools.Lang{Source: f.m, Seen: &tools.LangSeen{}}, Permissions: allowAll{}}
	res := tools.All().Call(context.Background(), env, message.ToolCall{Name: "diagnostics", Args: `{"severity": "hint"}`})
	if res.IsError || len(res.Content) > tools.DefaultMaxOutput || !strings.Contains(res.Content, "flood 0") {
		t.Fatalf("%d bytes: %.300s", len(res.Content), res.Content)
	}
	after := (&tools.Lang{Source: f.m}).AfterEdit(context.Background(), env, f.p, f.main, "package main\n", "package main\n\nfunc main() {}\n")
	if len(after) > tools.DefaultMaxOutput || !strings.Contains(after, "new errors in other files") && !strings.Contains(after, "in other files") {
		t.Fatalf("after an edit, %d bytes: %.500s", len(after), after)
	}
}

// A server that names files outside the project: their diagnostics are not
// kept, and the locations it answers are dropped, never read (the secret
// beside the project, through a link in it or not, never shows).
func TestHostileServerPathsOutside(t *testing.T) {
	f := newFake(t, "outside", Options{Wait: 500 * time.Millisecond, StartWait: 20 * time.Second})
	rep, err := f.m.Diagnostics(context.Background(), f.query(true, f.main))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range rep.Files {
		if !within(f.p.Root(), fd.Path) {
			t.Fatalf("diagnostics of %s kept", fd.Path)
		}
	}
	if len(rep.Files) != 1 || rep.Files[0].Path != f.main {
		t.Fatalf("files %+v", rep.Files)
	}
	env := &tools.Env{Workspace: f.ws, Project: "app", Lang: &tools.Lang{Source: f.m}, Permissions: allowAll{}}
	for _, tool := range []string{"definition", "references", "implementations"} {
		res := tools.All().Call(context.Background(), env, message.ToolCall{Name: tool, Args: `{"symbol": "main", "path": "main.go"}`})
		if strings.Contains(res.Content, "TOP-SECRET") || strings.Contains(res.Content, "root:") || strings.Contains(res.Content, "passwd") || strings.Contains(res.Content, "secret.txt") {
			t.Fatalf("%s read or named a file outside: %s", tool, res.Content)
		}
		if !strings.Contains(res.Content, "main.go:1: package main") || !strings.Contains(res.Content, "3 outside the project") {
			t.Fatalf("%s: %s", tool, res.Content)
		}
	}
}

// A server that announces a message of a gigabyte: it is refused before
// its body is read, and the server is stopped.
func TestHostileServerHugeFrame(t *testing.T) {
	f := newFake(t, "huge-frame", Options{Wait: 300 * time.Millisecond, StartWait: 10 * time.Second})
	bounded(t, 30*time.Second, "a huge frame", func() {
		f.m.Diagnostics(context.Background(), f.query(true, f.main))
	})
	waitState(t, f, "failed")
}

// An unused server stops after the idle time, and the next question starts
// it again.
func TestIdleServerStopsAndRestarts(t *testing.T) {
	f := newFake(t, "outside", Options{Wait: 300 * time.Millisecond, StartWait: 20 * time.Second, Idle: 300 * time.Millisecond})
	if _, err := f.m.Diagnostics(context.Background(), f.query(true, f.main)); err != nil {
		t.Fatal(err)
	}
	waitState(t, f, "stopped")
	if st := f.state(); st.Error != "stopped when idle" {
		t.Fatalf("%+v", st)
	}
	rep, err := f.m.Diagnostics(context.Background(), f.query(true, f.main))
	if err != nil || len(rep.Files) != 1 {
		t.Fatalf("after the restart: %+v %v", rep, err)
	}
}

// A server started without asking is stopped once the agent changed the
// project's command files, and starts again only with permission.
func TestRestartAfterCommandFilesChangedAsks(t *testing.T) {
	f := newFake(t, "outside", Options{Wait: 300 * time.Millisecond, StartWait: 20 * time.Second})
	if _, err := f.m.Diagnostics(context.Background(), f.query(true, f.main)); err != nil {
		t.Fatal(err)
	}
	q := f.query(true, f.main)
	q.CommandsChanged = true
	var asked []string
	q.Allow = func(ctx context.Context, command string) error {
		asked = append(asked, command)
		return errorString("denied by the test")
	}
	_, err := f.m.Diagnostics(context.Background(), q)
	var none *tools.NoServerError
	if !errors.As(err, &none) || !strings.Contains(err.Error(), "denied by the test") || len(asked) != 1 {
		t.Fatalf("err %v, asked %v", err, asked)
	}
	// A refusal is not asked again at every edit.
	if _, err := f.m.Diagnostics(context.Background(), q); err == nil || len(asked) != 1 {
		t.Fatalf("asked again: %v %v", err, asked)
	}
}

// Close waits for the servers to end: none outlives agent-lsp.
func TestCloseEndsTheServers(t *testing.T) {
	f := newFake(t, "outside", Options{Wait: 300 * time.Millisecond, StartWait: 20 * time.Second})
	if _, err := f.m.Diagnostics(context.Background(), f.query(true, f.main)); err != nil {
		t.Fatal(err)
	}
	s, _ := f.m.server(f.p)
	s.mu.Lock()
	pid := s.proc.p.Pid
	s.mu.Unlock()
	f.m.Close()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("the server (pid %d) still runs after Close", pid)
	}
}

// allowAll grants every permission.
type allowAll struct{}

func (allowAll) AllowCommand(context.Context, tools.CommandRequest) (tools.Permission, error) {
	return tools.Permission{Allowed: true}, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

func waitState(t *testing.T, f *fakeProject, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if f.state().State == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("state %+v, want %s", f.state(), want)
}

func TestParseSettings(t *testing.T) {
	st, err := ParseSettings(json.RawMessage(`{"go": {"command": "gopls", "args": ["-remote=auto"], "initializationOptions": {"staticcheck": true}}, "rust": null, "*": null}`))
	if err != nil || st["go"].Command != "gopls" || st["go"].Args[0] != "-remote=auto" || st["rust"] != nil || !st["go"].FromSettings {
		t.Fatalf("%+v %v", st, err)
	}
	for _, bad := range []string{`[]`, `{"go": {"cmd": "gopls"}}`, `{"go": {"command": ""}}`, `{"*": {"command": "x"}}`, `{"go": 3}`} {
		if _, err := ParseSettings(json.RawMessage(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestChoose(t *testing.T) {
	dir := t.TempDir()
	found := map[string]bool{"pyright-langserver": true, "gopls": true}
	look := func(name string) string {
		if found[name] {
			return "/bin/" + name
		}
		return ""
	}
	for _, tc := range []struct {
		st        Settings
		typ, want string // want: the server's name, or a part of the reason there is none
	}{
		{nil, "go", "gopls"},
		{nil, "python", "pyright"}, // basedpyright is not found: the next candidate
		{nil, "rust", "rust-analyzer not found on PATH"},
		{nil, "elixir", "no language server is known for elixir"},
		{nil, "unknown", "type is unknown"},
		{Settings{"go": nil}, "go", "turned off"},
		{Settings{"*": nil}, "go", "turns them off"},
		{Settings{"*": nil, "python": {Name: "pylsp", Command: "pyright-langserver", FromSettings: true}}, "python", "pylsp"},
		{Settings{"go": {Name: "mygopls", Command: "mygopls"}}, "go", "mygopls, the language server the languageServers setting names"},
	} {
		spec, _, err := choose(tc.st, tc.typ, dir, look)
		got := spec.Name
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%v %s: %q, want %q", tc.st, tc.typ, got, tc.want)
		}
	}
	os.WriteFile(filepath.Join(dir, "compile_commands.json"), []byte("[]"), 0o644)
	found["clangd"] = true
	if spec, _, err := choose(nil, "unknown", dir, look); err != nil || spec.Name != "clangd" {
		t.Fatalf("a C project: %+v %v", spec, err)
	}
}

func TestLookPathNeverTheCurrentDirectory(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "gopls"), []byte("#!/bin/sh\n"), 0o755)
	if p := LookPath("gopls", []string{"PATH=.:" + dir}); p != filepath.Join(dir, "gopls") {
		t.Fatalf("%q", p)
	}
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	if p := LookPath("gopls", []string{"PATH=.:relative"}); p != "" {
		t.Fatalf("found %q through a relative PATH entry", p)
	}
}
