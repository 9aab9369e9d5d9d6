//go:build unix

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

var (
	mcpServerOnce sync.Once
	mcpServerBin  string
	mcpServerErr  error
)

// mcpTestServer builds our MCP test server (testdata/mcp/testserver).
func mcpTestServer(t *testing.T) string {
	mcpServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-testserver")
		if err != nil {
			mcpServerErr = err
			return
		}
		mcpServerBin = filepath.Join(dir, "testserver")
		if out, err := exec.Command("go", "build", "-o", mcpServerBin, "../testdata/mcp/testserver").CombinedOutput(); err != nil {
			mcpServerErr = err
			t.Logf("%s", out)
		}
	})
	if mcpServerErr != nil {
		t.Fatal(mcpServerErr)
	}
	return mcpServerBin
}

// asked records the questions a client was asked and answers them.
type asked struct {
	mu        sync.Mutex
	questions []string
	answer    func(q string) string
}

func (a *asked) handle(params json.RawMessage) any {
	var p struct {
		Message string `json:"message"`
	}
	json.Unmarshal(params, &p)
	a.mu.Lock()
	a.questions = append(a.questions, p.Message)
	a.mu.Unlock()
	return map[string]string{"title": a.answer(p.Message)}
}

func (a *asked) count(substr string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, q := range a.questions {
		if strings.Contains(q, substr) {
			n++
		}
	}
	return n
}

type mcpServerRow struct {
	Name     string   `json:"name"`
	Source   string   `json:"source"`
	Status   string   `json:"status"`
	Tools    int      `json:"tools"`
	Withheld []string `json:"withheld"`
}

func mcpServers(t *testing.T, c *lspClient) map[string]mcpServerRow {
	t.Helper()
	var res []struct {
		Servers []mcpServerRow `json:"servers"`
	}
	if err := c.command("agent.mcp", map[string]any{}, &res); err != nil || len(res) != 1 {
		t.Fatalf("agent.mcp: %+v %v", res, err)
	}
	out := map[string]mcpServerRow{}
	for _, s := range res[0].Servers {
		out[s.Name] = s
	}
	return out
}

// An editor-configured MCP server starts without asking; its tools reach
// the model as mcp__<server>__<tool>; the first call of a tool asks; its
// result reaches the model; the server never sees the API key.
func TestMCPEditorServer(t *testing.T) {
	bin := mcpTestServer(t)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("mcp__tools__echo", map[string]any{"text": "hello from mcp"})}},
		{ToolCalls: []scripted.ToolCall{call("mcp__tools__env", map[string]any{"name": "OPENAI_API_KEY"})}},
		{Text: "done"},
	}})
	c := startServer(t, envFor(t, srv)...)
	a := &asked{answer: func(string) string { return "Always for this session" }}
	c.askResult = a.handle
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")},
		map[string]any{"mcpServers": map[string]any{"tools": map[string]any{"command": bin}}})
	if rows := mcpServers(t, c); rows["tools"].Source != "editor" || rows["tools"].Status != "stopped" {
		t.Fatalf("before the first run: %+v", rows)
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "use the tools"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	reqs := srv.Requests()
	var names []string
	for _, tl := range reqs[0].Tools {
		names = append(names, tl.Function.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "mcp__tools__echo") {
		t.Fatalf("tools shown to the model: %v", names)
	}
	if tm := mcpToolResults(reqs[1]); !strings.Contains(tm, "hello from mcp") {
		t.Fatalf("echo result: %q", tm)
	}
	if tm := mcpToolResults(reqs[2]); strings.Contains(tm, "sk-e2e-test-key") {
		t.Fatalf("the MCP server saw the API key: %q", tm)
	}
	if n := a.count("mcp__tools__echo, a tool of the MCP server tools"); n != 1 {
		t.Fatalf("asked %d times about echo: %v", n, a.questions)
	}
	if rows := mcpServers(t, c); rows["tools"].Status != "running" || rows["tools"].Tools < 5 {
		t.Fatalf("after the run: %+v", rows)
	}
}

// toolResults is the text of the tool messages of the newest turn of a request.
// An MCP server's tools that do not fit a small context are left out of the
// model's list, and agent.mcp names them under their server.
func TestMCPWithheldTools(t *testing.T) {
	bin := mcpTestServer(t)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "done"}}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{
		"mcpServers": map[string]any{"tools": map[string]any{"command": bin}},
		"model":      map[string]any{"contextTokens": 3000},
	})
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "hi"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	offered := map[string]bool{}
	for _, tl := range srv.Requests()[0].Tools {
		offered[tl.Function.Name] = true
	}
	row := mcpServers(t, c)["tools"]
	if len(row.Withheld) == 0 {
		t.Fatalf("nothing withheld in a 3000-token context: %+v", row)
	}
	for _, name := range row.Withheld {
		if offered[name] || !strings.HasPrefix(name, "mcp__tools__") {
			t.Fatalf("withheld %v, offered %v", row.Withheld, offered)
		}
	}
}

func mcpToolResults(req openai.ChatCompletionRequest) string {
	var b strings.Builder
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == "tool"; i-- {
		b.WriteString(req.Messages[i].Content)
	}
	return b.String()
}

// A repository's .mcp.json server does not start until the user approves
// it; "Always for this project" is remembered in the store for the same
// definition, and asked again when the definition changes; denied, the
// server does not start and agent.mcp says so.
func TestMCPProjectServerNeedsApproval(t *testing.T) {
	bin := mcpTestServer(t)
	sample := copyFixture(t, "sample")
	write := func(args ...string) {
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"repo": map[string]any{"command": bin, "args": args}}})
		os.WriteFile(filepath.Join(sample, ".mcp.json"), b, 0o644)
	}
	write()
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "a"}, {Text: "b"}, {Text: "c"}, {Text: "d"}}})
	env := envFor(t, srv)
	session := func(answer string) (*lspClient, *asked) {
		c := startServer(t, env...)
		a := &asked{answer: func(string) string { return answer }}
		c.askResult = a.handle
		c.initialize(map[string]string{"sample": sample}, nil)
		var res runResult
		if err := c.command("agent.run", map[string]any{"prompt": "hi"}, &res); err != nil || res.Status != "done" {
			t.Fatalf("%+v %v", res, err)
		}
		return c, a
	}
	c, a := session("Always for this project")
	if a.count("defines the MCP server repo") != 1 || a.count("(in the sandbox)") != 1 || mcpServers(t, c)["repo"].Status != "running" {
		t.Fatalf("first window: asked %v, servers %+v", a.questions, mcpServers(t, c))
	}
	closeServer(c)
	c2, a2 := session("Deny")
	if n := a2.count("defines the MCP server repo"); n != 0 || mcpServers(t, c2)["repo"].Status != "running" {
		t.Fatalf("the approval was not remembered: asked %v", a2.questions)
	}
	closeServer(c2)
	write("--changed")
	c3, a3 := session("Deny")
	if n := a3.count("defines the MCP server repo"); n != 1 {
		t.Fatalf("a changed definition was not asked about again: %v", a3.questions)
	}
	if rows := mcpServers(t, c3); rows["repo"].Status != "denied" {
		t.Fatalf("denied: %+v", rows)
	}
}

// closeServer ends a server as an editor does and waits for it to exit, so
// that the next one opens the store.
func closeServer(c *lspClient) {
	c.call("shutdown", nil, nil)
	c.conn.Notify(context.Background(), "exit", nil)
	c.cmd.Wait()
}

// An HTTP MCP server configured by the editor: its tools reach the model
// and a call goes through.
func TestMCPHTTPServer(t *testing.T) {
	cmd := exec.Command(mcpTestServer(t), "-http", "127.0.0.1:0")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	if err != nil || !strings.HasPrefix(url, "http://") {
		t.Fatalf("the test server said %q: %v", line, err)
	}
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("mcp__web__echo", map[string]any{"text": "over http"})}},
		{Text: "done"},
	}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{
		"mcpServers":  map[string]any{"web": map[string]any{"type": "http", "url": url}},
		"permissions": map[string]any{"allow": []string{"mcp__web__*"}}})
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "echo over http"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if tm := mcpToolResults(srv.Requests()[1]); !strings.Contains(tm, "over http") {
		t.Fatalf("result %q", tm)
	}
	if rows := mcpServers(t, c); rows["web"].Status != "running" || rows["web"].Source != "editor" {
		t.Fatalf("%+v", rows)
	}
}

// A slow MCP call is cancelled with its run (the server hears it), and a
// server that crashes mid-call gives the model an error, then serves the
// next call (restarted).
func TestMCPCancelAndCrash(t *testing.T) {
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "be slow", Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("mcp__tools__slow", map[string]any{"seconds": 60})}}, {Text: "never"}}},
		{Match: "crash it", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("mcp__tools__crash", map[string]any{})}},
			{ToolCalls: []scripted.ToolCall{call("mcp__tools__echo", map[string]any{"text": "back again"})}},
			{Text: "done"},
		}},
	}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{
		"mcpServers":  map[string]any{"tools": map[string]any{"command": mcpTestServer(t)}},
		"permissions": map[string]any{"allow": []string{"mcp__tools__*"}}})
	done := make(chan runResult, 1)
	go func() {
		var r runResult
		c.command("agent.run", map[string]any{"prompt": "be slow"}, &r)
		done <- r
	}()
	var session string
	c.waitFor("the slow call to start", func() bool {
		for _, e := range c.events() {
			if e["type"] == "tool.start" && e["name"] == "mcp__tools__slow" {
				session = e["session"].(string)
				return true
			}
		}
		return false
	})
	// tool.start comes before the call reaches the MCP server (it may still
	// be starting): cancelled before, the call is never sent, and there is
	// nothing for the server to hear.
	c.waitFor("the MCP server to start the slow call", func() bool {
		for _, n := range c.notifications("window/logMessage") {
			if strings.Contains(string(n), "slow: started") {
				return true
			}
		}
		return false
	})
	if err := c.command("agent.cancel", map[string]any{"session": session}, nil); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Status != "cancelled" {
		t.Fatalf("the run: %+v", r)
	}
	c.waitFor("the server to hear the cancellation", func() bool {
		for _, n := range c.notifications("window/logMessage") {
			if strings.Contains(string(n), "slow: cancelled") {
				return true
			}
		}
		return false
	})

	var r runResult
	if err := c.command("agent.run", map[string]any{"prompt": "crash it"}, &r); err != nil || r.Status != "done" {
		t.Fatalf("%+v %v", r, err)
	}
	reqs := srv.Requests()
	crashed, again := mcpToolResults(reqs[len(reqs)-2]), mcpToolResults(reqs[len(reqs)-1])
	if !strings.HasPrefix(crashed, "error: the MCP server tools could not run crash") || !strings.Contains(again, "back again") {
		t.Fatalf("after a crash: %q, then %q", crashed, again)
	}
}

// The reference MCP server (@modelcontextprotocol/server-everything, from
// npm: testdata/mcp/everything/install.sh) over stdio: an independent
// implementation of the protocol agrees with ours on listing and calling.
func TestMCPServerEverything(t *testing.T) {
	bin, _ := filepath.Abs("../testdata/mcp/everything/node_modules/.bin/mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v: run testdata/mcp/everything/install.sh (scripts/test-all.sh does)", err)
		}
		t.Skipf("%v: run testdata/mcp/everything/install.sh", err)
	}
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("mcp__everything__echo", map[string]any{"message": "from the reference server"})}},
		{Text: "done"},
	}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{
		"mcpServers":  map[string]any{"everything": map[string]any{"command": bin, "args": []string{"stdio"}}},
		"permissions": map[string]any{"allow": []string{"mcp__everything__*"}}})
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "echo"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if tm := mcpToolResults(srv.Requests()[1]); !strings.Contains(tm, "Echo: from the reference server") {
		t.Fatalf("result %q", tm)
	}
	if rows := mcpServers(t, c); rows["everything"].Status != "running" || rows["everything"].Tools < 5 {
		t.Fatalf("%+v", rows)
	}
}

// A project's servers stop after mcpIdle seconds without a call, and the
// next call starts them again.
func TestMCPIdleStop(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("mcp__tools__echo", map[string]any{"text": "one"})}}, {Text: "a"},
		{ToolCalls: []scripted.ToolCall{call("mcp__tools__echo", map[string]any{"text": "two"})}}, {Text: "b"},
	}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{
		"mcpServers": map[string]any{"tools": map[string]any{"command": mcpTestServer(t)}}, "mcpIdle": 1,
		"permissions": map[string]any{"allow": []string{"mcp__tools__*"}}})
	var r runResult
	if err := c.command("agent.run", map[string]any{"prompt": "first"}, &r); err != nil || r.Status != "done" {
		t.Fatalf("%+v %v", r, err)
	}
	c.waitFor("the idle servers to stop", func() bool { return mcpServers(t, c)["tools"].Status == "stopped" })
	if err := c.command("agent.run", map[string]any{"prompt": "second"}, &r); err != nil || r.Status != "done" {
		t.Fatalf("%+v %v", r, err)
	}
	reqs := srv.Requests()
	if tm := mcpToolResults(reqs[len(reqs)-1]); !strings.Contains(tm, "two") {
		t.Fatalf("after the idle stop: %q", tm)
	}
}

// A repository's "sandbox": false is ignored: the server runs in the
// sandbox, and the question says so. Only the user's mcp.unsandboxed lets
// a repository's server run with the user's rights, and the question then
// says it is not sandboxed. The server's command tries to write outside
// the project and the temporary directory.
func TestMCPRepositoryCannotTurnTheSandboxOff(t *testing.T) {
	// The server's program and the place it writes are outside /tmp: with
	// namespaces a command's /tmp is its own (a program the command line
	// names only inside a shell line is not carried into it), which would
	// hide both and prove nothing.
	keep, err := os.MkdirTemp("/var/tmp", "agent-lsp-mcp-")
	if err != nil {
		t.Skipf("no /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(keep) })
	bin := filepath.Join(keep, "testserver")
	if b, err := os.ReadFile(mcpTestServer(t)); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copy the test server: %v", err)
	}
	for i, c := range []struct {
		name     string
		opts     map[string]any
		question string
		written  bool
	}{
		{"the repository says sandbox false", nil, `its "sandbox": false is ignored`, false},
		{"the user's mcp.unsandboxed names it", map[string]any{"mcp": map[string]any{"unsandboxed": []string{"repo"}}}, "NOT sandboxed: with your rights", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			sample, outside, tmp := copyFixture(t, "sample"), filepath.Join(keep, "outside"+strconv.Itoa(i)), filepath.Join(base, "tmp")
			os.MkdirAll(outside, 0o755)
			os.MkdirAll(tmp, 0o755)
			marker := filepath.Join(outside, "pwned")
			b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"repo": map[string]any{
				"command": "sh", "args": []string{"-c", "touch " + marker + "; exec " + bin}, "sandbox": false}}})
			os.WriteFile(filepath.Join(sample, ".mcp.json"), b, 0o644)
			srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "a"}}})
			cl := startServer(t, envFor(t, srv, "TMPDIR="+tmp)...)
			a := &asked{answer: func(string) string { return "Allow" }}
			cl.askResult = a.handle
			cl.initialize(map[string]string{"sample": sample}, c.opts)
			if abi := landlockABI(t, cl); abi == 0 {
				t.Skip("no Landlock on this kernel: nothing is sandboxed")
			}
			var res runResult
			if err := cl.command("agent.run", map[string]any{"prompt": "hi"}, &res); err != nil || res.Status != "done" {
				t.Fatalf("%+v %v", res, err)
			}
			if a.count(c.question) != 1 {
				t.Fatalf("the question does not say %q: %v", c.question, a.questions)
			}
			if rows := mcpServers(t, cl); rows["repo"].Status != "running" {
				t.Fatalf("servers %+v", rows)
			}
			if _, err := os.Stat(marker); (err == nil) != c.written {
				t.Fatalf("the server wrote outside the project: %v, want %v", err == nil, c.written)
			}
		})
	}
}
