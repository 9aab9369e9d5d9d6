//go:build unix

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/lsptest"
)

// binary is the agent-lsp executable built once for these tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agent-lsp-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "agent-lsp")
	build := exec.Command("go", "build", "-race", "-o", binary, "../cmd/agent-lsp")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build agent-lsp: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lspClient drives the real binary over stdio with the tests' LSP client;
// the test decides the editor's answers by setting the result funcs.
type lspClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	conn   *lsptest.Client
	stderr *lockedBuffer

	mu          sync.Mutex // guards the result funcs, which a test may set while the server runs
	applyResult func(params json.RawMessage) any
	askResult   func(params json.RawMessage) any
	saveResult  func(params json.RawMessage) any // agent/saveDocuments; nil: not supported
	// diagnosticsResult and languageResult answer agent/diagnostics and
	// agent/languageRequest; both set: the client has experimental.language.
	diagnosticsResult func(params json.RawMessage) any
	languageResult    func(params json.RawMessage) any
}

type lockedBuffer struct {
	mu sync.Mutex
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

func startServer(t *testing.T, env ...string) *lspClient {
	t.Helper()
	cmd := exec.Command(binary)
	// The server in-process: these tests are about it (server/daemon tests
	// the daemon); a test may turn the daemon on in env.
	cmd.Env = append(append(os.Environ(), "AGENT_LSP_DAEMON=off"), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	c := &lspClient{t: t, cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.applyResult = func(json.RawMessage) any { return map[string]any{"applied": true} }
	c.askResult = func(json.RawMessage) any { return map[string]string{"title": "Deny"} }
	c.conn = lsptest.New(lsptest.Stream(stdout, stdin))
	for method, f := range map[string]*func(json.RawMessage) any{
		"workspace/applyEdit": &c.applyResult, "window/showMessageRequest": &c.askResult, "agent/saveDocuments": &c.saveResult,
		"agent/diagnostics": &c.diagnosticsResult, "agent/languageRequest": &c.languageResult,
	} {
		c.conn.Handle(method, c.answer(method, f))
	}
	t.Cleanup(func() {
		cmd.Process.Kill() // first: closing the connection waits for its reader, which a hung server never ends
		c.conn.Close()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server stderr:\n%s", c.stderr.String())
		}
	})
	return c
}

// answer is the handler of method that answers with the test's result func
// of the moment, and MethodNotFound while it is nil.
func (c *lspClient) answer(method string, f *func(json.RawMessage) any) lsptest.Handler {
	return func(_ context.Context, params json.RawMessage) (any, error) {
		c.mu.Lock()
		result := *f
		c.mu.Unlock()
		if result == nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "test client: %s", method)
		}
		return result(params), nil
	}
}

func (c *lspClient) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // only to catch a hang: a 200-turn run under -race on a loaded machine took over a minute
	defer cancel()
	return c.conn.Call(ctx, method, params, result)
}

func (c *lspClient) command(name string, args any, result any) error {
	return c.call("workspace/executeCommand", map[string]any{"command": name, "arguments": []any{args}}, result)
}

func (c *lspClient) initialize(folders map[string]string, initOpts map[string]any) map[string]any {
	c.t.Helper()
	var fs []map[string]string
	for _, name := range sortedKeys(folders) {
		fs = append(fs, map[string]string{"uri": string(uri.File(folders[name])), "name": name})
	}
	var res map[string]any
	err := c.call("initialize", map[string]any{
		"processId": os.Getpid(), "workspaceFolders": fs, "initializationOptions": initOpts,
		"capabilities": c.capabilities(),
	}, &res)
	if err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
	c.conn.Notify(context.Background(), "initialized", map[string]any{})
	return res
}

// capabilities are the client's: progress, and saving for the agent when
// the test answers agent/saveDocuments.
func (c *lspClient) capabilities() map[string]any {
	caps := map[string]any{"window": map[string]any{"workDoneProgress": true}}
	c.mu.Lock()
	defer c.mu.Unlock()
	experimental := map[string]any{}
	if c.saveResult != nil {
		experimental["saveDocuments"] = true
	}
	if c.diagnosticsResult != nil && c.languageResult != nil {
		experimental["language"] = true
	}
	if len(experimental) > 0 {
		caps["experimental"] = experimental
	}
	return caps
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// notifications returns the params of what the server sent of method
// (requests too), in arrival order.
func (c *lspClient) notifications(method string) []json.RawMessage {
	return c.conn.Messages(method)
}

// edits returns the workspace/applyEdit requests' params, in arrival order.
func (c *lspClient) edits() []json.RawMessage {
	return c.conn.Messages("workspace/applyEdit")
}

func (c *lspClient) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // only to catch a hang
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// events returns the agent/event notifications as maps.
func (c *lspClient) events() []map[string]any {
	return c.conn.Events()
}

func copyFixture(t *testing.T, name string) string {
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("..", "testdata", "workspaces", name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

func model(t *testing.T, script scripted.Script) *scripted.Server {
	srv, err := scripted.Start("127.0.0.1:0", script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func envFor(t *testing.T, srv *scripted.Server, extra ...string) []string {
	return append([]string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=sk-e2e-test-key", "AGENT_LSP_MODEL=scripted",
		"AGENT_LSP_STORE=" + filepath.Join(t.TempDir(), "store.db"), sandboxGoCache()}, extra...)
}

// sandboxGoCache shares one sandbox Go build cache between the test
// projects (each a new directory, which would otherwise build the standard
// library again in a cache of its own).
func sandboxGoCache() string {
	dir, _ := os.UserCacheDir()
	return sandbox.GoCacheEnv + "=" + filepath.Join(dir, "agent-lsp-test-sandbox-go-build")
}

func call(name string, args any) scripted.ToolCall {
	b, _ := json.Marshal(args)
	return scripted.ToolCall{Name: name, Args: b}
}

type runResult struct {
	Session string `json:"session"`
	Status  string `json:"status"`
	Reply   string `json:"reply"`
	Edits   int    `json:"edits"`
	Steps   int    `json:"steps"`
	Error   string `json:"error"`
}

func TestProjectsListsFolders(t *testing.T) {
	srv := model(t, scripted.Script{})
	sample, other := copyFixture(t, "sample"), copyFixture(t, "other")
	os.MkdirAll(filepath.Join(sample, ".git"), 0o755)
	os.WriteFile(filepath.Join(sample, ".git", "HEAD"), []byte("ref: refs/heads/feature/e2e\n"), 0o644)
	c := startServer(t, envFor(t, srv)...)
	res := c.initialize(map[string]string{"sample": sample, "other": other}, nil)
	caps := res["capabilities"].(map[string]any)
	cmds := caps["executeCommandProvider"].(map[string]any)
	if len(cmds["commands"].([]any)) != len(server.Commands) || cmds["workDoneProgress"] != true || caps["positionEncoding"] != "utf-16" {
		t.Fatalf("capabilities: %v", caps)
	}
	var projects []struct {
		Name      string         `json:"name"`
		Path      string         `json:"path"`
		Type      string         `json:"type"`
		GitBranch string         `json:"gitBranch"`
		Context   map[string]any `json:"context"`
	}
	if err := c.command("agent.projects", map[string]any{}, &projects); err != nil {
		t.Fatal(err)
	}
	if len(projects) != 2 {
		t.Fatalf("projects: %+v", projects)
	}
	byName := map[string]int{}
	for i, p := range projects {
		byName[p.Name] = i
	}
	s, o := projects[byName["sample"]], projects[byName["other"]]
	if s.Type != "go" || s.GitBranch != "feature/e2e" || s.Path != sample || o.Type != "javascript" || o.GitBranch != "" || s.Context["lastBuild"] == nil {
		t.Fatalf("projects: %+v", projects)
	}
}

func TestRunEditsOpenDocument(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{Text: "Reading.", ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}},
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "})}},
		{Text: "Changed the greeting to Hi, which is friendlier and shorter than before. " + strings.Repeat("More text. ", 40)},
	}})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": sample}, nil)
	path := filepath.Join(sample, "greet.go")
	unsaved := "package sample\n\n// unsaved comment\nfunc Greet(name string) string {\n\treturn \"Hello, \" + name\n}\n"
	c.conn.Notify(context.Background(), "textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": string(uri.File(path)), "languageId": "go", "version": 7, "text": unsaved}})
	var res runResult
	err := c.call("workspace/executeCommand", map[string]any{"command": "agent.run", "workDoneToken": "tok-1",
		"arguments": []any{map[string]any{"prompt": "Make the greeting shorter please"}}}, &res)
	if err != nil || res.Status != "done" || res.Edits != 1 || !strings.HasPrefix(res.Reply, "Changed the greeting") || res.Steps != 5 {
		t.Fatalf("result %+v, err %v", res, err)
	}
	// The model read the unsaved buffer.
	if tm := srv.Requests()[1].Messages; !strings.Contains(tm[len(tm)-1].Content, "unsaved comment") {
		t.Fatalf("read_file did not see the unsaved buffer: %q", tm[len(tm)-1].Content)
	}
	// The edit is a versioned TextDocumentEdit with the right range and text.
	var edit struct {
		Label string
		Edit  struct {
			DocumentChanges []struct {
				TextDocument struct {
					URI     string
					Version *int
				}
				Edits []struct {
					Range   map[string]map[string]int
					NewText string
				}
			}
		}
	}
	json.Unmarshal(c.edits()[0], &edit)
	dc := edit.Edit.DocumentChanges[0]
	if dc.TextDocument.Version == nil || *dc.TextDocument.Version != 7 || dc.TextDocument.URI != string(uri.File(path)) ||
		dc.Edits[0].NewText != "Hi, " || dc.Edits[0].Range["start"]["line"] != 4 || dc.Edits[0].Range["start"]["character"] != 9 ||
		dc.Edits[0].Range["end"]["character"] != 16 || !strings.HasPrefix(edit.Label, "agent: ") {
		t.Fatalf("applyEdit: %s", c.edits()[0])
	}
	// Progress: begin, reports, end, all on the client's token.
	checkProgress(t, c, "tok-1", "agent: Make the greeting shorter please")
	// agent/event: seq rises by one from run.start to run.end; deltas are batched.
	c.waitFor("run.end", func() bool {
		evs := c.events()
		return len(evs) > 0 && evs[len(evs)-1]["type"] == "run.end"
	})
	evs := c.events()
	deltas, final := 0, ""
	for i, e := range evs {
		if int(e["seq"].(float64)) != i+1 || e["session"] != res.Session {
			t.Fatalf("event %d: %v", i, e)
		}
		if e["type"] == "message.delta" {
			deltas++
			final += e["text"].(string)
		}
	}
	if evs[0]["type"] != "run.start" || evs[len(evs)-1]["type"] != "run.end" || evs[len(evs)-1]["status"] != "done" {
		t.Fatalf("first/last events: %v / %v", evs[0], evs[len(evs)-1])
	}
	if !strings.Contains(final, "friendlier") || deltas > 20 {
		t.Fatalf("%d delta events (scripted in 8-byte chunks: must be batched)", deltas)
	}
}

// checkProgress waits for the run's progress to end and checks that it was
// begin (with title, cancellable), reports, end, all on the client's token.
func checkProgress(t *testing.T, c *lspClient, token, title string) {
	t.Helper()
	c.waitFor("progress end", func() bool {
		ps := c.notifications("$/progress")
		return len(ps) > 0 && strings.Contains(string(ps[len(ps)-1]), `"end"`)
	})
	var kinds []string
	for _, raw := range c.notifications("$/progress") {
		var p struct {
			Token string
			Value map[string]any
		}
		json.Unmarshal(raw, &p)
		if p.Token != token {
			t.Fatalf("progress on token %q", p.Token)
		}
		kinds = append(kinds, p.Value["kind"].(string))
		if p.Value["kind"] == "begin" && (p.Value["title"] != title || p.Value["cancellable"] != true) {
			t.Fatalf("begin: %v", p.Value)
		}
	}
	if len(kinds) < 4 || kinds[0] != "begin" || kinds[len(kinds)-1] != "end" || kinds[1] != "report" {
		t.Fatalf("progress kinds %v", kinds)
	}
}

func TestRefusedEditAndReviewMode(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "notes/todo.txt", "content": "one\n"})}},
		{Text: "ok"},
	}})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": sample}, map[string]any{"edits": "review"})
	c.applyResult = func(json.RawMessage) any {
		return map[string]any{"applied": false, "failureReason": "rejected in preview"}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "note it"}, &res); err != nil || res.Edits != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	tm := srv.Requests()[1].Messages
	if got := tm[len(tm)-1].Content; !strings.Contains(got, "did not apply the edit of notes/todo.txt (rejected in preview)") {
		t.Fatalf("refusal not sent to the model: %q", got)
	}
	var edit struct {
		Edit struct {
			DocumentChanges   []map[string]any
			ChangeAnnotations map[string]struct {
				Label             string
				NeedsConfirmation bool
			}
		}
	}
	json.Unmarshal(c.edits()[0], &edit)
	dcs := edit.Edit.DocumentChanges
	if len(dcs) != 2 || dcs[0]["kind"] != "create" || dcs[0]["annotationId"] == nil || dcs[1]["textDocument"].(map[string]any)["version"] != nil {
		t.Fatalf("document changes: %v", dcs)
	}
	for _, a := range edit.Edit.ChangeAnnotations {
		if !a.NeedsConfirmation {
			t.Fatalf("annotation without needsConfirmation: %+v", a)
		}
	}
	if len(edit.Edit.ChangeAnnotations) != 1 {
		t.Fatalf("annotations: %+v", edit.Edit.ChangeAnnotations)
	}
	if _, err := os.Stat(filepath.Join(sample, "notes", "todo.txt")); err == nil {
		t.Fatal("file written behind the editor's back")
	}
}
