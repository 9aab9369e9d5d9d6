//go:build unix

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	openai "github.com/sashabaranov/go-openai"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// acpClient is an ACP client (the SDK's client side) driving `agent-lsp acp`:
// an editor with buffers (fs/read_text_file, fs/write_text_file) that
// answers permission requests and records every session/update as a line.
type acpClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	conn   *acp.ClientSideConnection
	stderr *lockedBuffer

	mu      sync.Mutex
	lines   []string          // the updates, rendered
	buffers map[string]string // the editor's text by path; a path not here is read from disk
	written map[string]string // fs/write_text_file, by path
	asked   []acp.RequestPermissionRequest
	answer  func(acp.RequestPermissionRequest) string // the option ID chosen; "" cancels
}

// startACP starts `agent-lsp acp` with env and initializes it; fs offers
// fs/read_text_file and fs/write_text_file.
//
// It runs in-process (AGENT_LSP_DAEMON=off) unless env turns the daemon on,
// as the tests whose processes share a store do.
func startACP(t *testing.T, fs bool, env []string, args ...string) *acpClient {
	t.Helper()
	return startACPIn(t, "", fs, env, args...)
}

// startACPIn is startACP in the working directory dir.
func startACPIn(t *testing.T, dir string, fs bool, env []string, args ...string) *acpClient {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"acp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "AGENT_LSP_DAEMON=off"), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	c := &acpClient{t: t, cmd: cmd, stderr: &lockedBuffer{}, buffers: map[string]string{}, written: map[string]string{},
		answer: func(acp.RequestPermissionRequest) string { return "reject_once" }}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.conn = acp.NewClientSideConnection(c, stdin, stdout)
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if strings.Contains(c.stderr.String(), "DATA RACE") {
			t.Errorf("the race detector found a race in agent-lsp acp")
		}
		if t.Failed() {
			t.Logf("agent-lsp acp stderr:\n%s", c.stderr.String())
		}
	})
	res, err := c.conn.Initialize(c.ctx(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: fs, WriteTextFile: fs}}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != acp.ProtocolVersionNumber || !res.AgentCapabilities.LoadSession || !res.AgentCapabilities.PromptCapabilities.EmbeddedContext ||
		!res.AgentCapabilities.PromptCapabilities.Image {
		t.Fatalf("initialize: %+v", res)
	}
	return c
}

func (c *acpClient) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	c.t.Cleanup(cancel)
	return ctx
}

func (c *acpClient) newSession(cwd string, mcp ...acp.McpServer) string {
	c.t.Helper()
	if mcp == nil {
		mcp = []acp.McpServer{}
	}
	res, err := c.conn.NewSession(c.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: mcp})
	if err != nil {
		c.t.Fatalf("session/new: %v", err)
	}
	if res.Modes == nil || res.Modes.CurrentModeId != "apply" {
		c.t.Fatalf("session/new modes: %+v", res.Modes)
	}
	return string(res.SessionId)
}

func (c *acpClient) prompt(session string, text string) (acp.PromptResponse, error) {
	return c.conn.Prompt(c.ctx(), acp.PromptRequest{SessionId: acp.SessionId(session), Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

func (c *acpClient) transcript() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

func (c *acpClient) add(line string) {
	c.mu.Lock()
	c.lines = append(c.lines, line)
	c.mu.Unlock()
}

// waitFor waits until the transcript has want.
func (c *acpClient) waitFor(want string) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(c.transcript(), want) {
		if time.Now().After(deadline) {
			c.t.Fatalf("no %q in:\n%s", want, c.transcript())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SessionUpdate implements acp.Client: each update as a line.
func (c *acpClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		c.mu.Lock()
		defer c.mu.Unlock()
		if n := len(c.lines); n > 0 && strings.HasPrefix(c.lines[n-1], "agent: ") { // a streamed message's next chunk
			c.lines[n-1] += u.AgentMessageChunk.Content.Text.Text
		} else {
			c.lines = append(c.lines, "agent: "+u.AgentMessageChunk.Content.Text.Text)
		}
	case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil:
		c.add("user: " + u.UserMessageChunk.Content.Text.Text)
	case u.ToolCall != nil:
		c.add(fmt.Sprintf("tool_call %s %q %s %s%s", u.ToolCall.ToolCallId, u.ToolCall.Title, u.ToolCall.Kind, u.ToolCall.Status, contentText(u.ToolCall.Content)))
	case u.ToolCallUpdate != nil:
		status := ""
		if u.ToolCallUpdate.Status != nil {
			status = string(*u.ToolCallUpdate.Status)
		}
		c.add(fmt.Sprintf("update %s %s%s", u.ToolCallUpdate.ToolCallId, status, contentText(u.ToolCallUpdate.Content)))
	case u.AvailableCommandsUpdate != nil:
		var names []string
		for _, ac := range u.AvailableCommandsUpdate.AvailableCommands {
			name := ac.Name
			if ac.Input != nil && ac.Input.Unstructured != nil {
				name += " " + ac.Input.Unstructured.Hint
			}
			names = append(names, name)
		}
		c.add("commands " + strings.Join(names, ", "))
	case u.Plan != nil:
		var items []string
		for _, e := range u.Plan.Entries {
			items = append(items, fmt.Sprintf("%s=%s", e.Content, e.Status))
		}
		c.add("plan " + strings.Join(items, ", "))
	}
	return nil
}

func contentText(cs []acp.ToolCallContent) string {
	var b strings.Builder
	for _, c := range cs {
		switch {
		case c.Diff != nil:
			old := "<new file>"
			if c.Diff.OldText != nil {
				old = fmt.Sprintf("%d bytes", len(*c.Diff.OldText))
			}
			fmt.Fprintf(&b, " [diff %s from %s to %q]", filepath.Base(c.Diff.Path), old, c.Diff.NewText)
		case c.Content != nil && c.Content.Content.Text != nil:
			fmt.Fprintf(&b, " [%s]", c.Content.Content.Text.Text)
		}
	}
	return b.String()
}

// ReadTextFile implements acp.Client: the buffer, else the disk.
func (c *acpClient) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	c.mu.Lock()
	text, ok := c.buffers[p.Path]
	c.mu.Unlock()
	if !ok {
		b, err := os.ReadFile(p.Path)
		if err != nil {
			return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": "no such file: " + p.Path})
		}
		text = string(b)
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

// WriteTextFile implements acp.Client: into the buffer and to disk, as Zed does.
func (c *acpClient) WriteTextFile(_ context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	c.mu.Lock()
	c.buffers[p.Path], c.written[p.Path] = p.Content, p.Content
	c.mu.Unlock()
	return acp.WriteTextFileResponse{}, os.WriteFile(p.Path, []byte(p.Content), 0o644)
}

// RequestPermission implements acp.Client.
func (c *acpClient) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	answer := c.answer
	c.mu.Unlock()
	id := answer(p)
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	c.add(fmt.Sprintf("permission %s %q -> %s", p.ToolCall.ToolCallId, title, id))
	if id == "" {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(id))}, nil
}

func (c *acpClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}
func (c *acpClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}
func (c *acpClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}
func (c *acpClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}
func (c *acpClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

// daemonEnv turns the daemon on for a test's processes, which then share
// its store; the daemon exits soon after the test.
var daemonEnv = []string{"AGENT_LSP_DAEMON=on", "AGENT_LSP_DAEMON_IDLE=2s"}

// toolResult is what the model was told for call id, from its requests.
func toolResult(reqs []openai.ChatCompletionRequest, id string) string {
	for _, r := range reqs {
		for _, m := range r.Messages {
			if m.ToolCallID == id {
				return m.Content
			}
		}
	}
	return ""
}

// A prompt over ACP: read_file reads the editor's unsaved buffer, the edit
// is written through the client with its diff on the tool call, a command
// asks with session/request_permission on its own tool call, todo_write is a
// plan, and the turn ends with end_turn.
func TestACPPrompt(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{Text: "Reading.", ToolCalls: []scripted.ToolCall{withID(call("read_file", map[string]any{"path": "greet.go"}), "call_read")}},
		{ToolCalls: []scripted.ToolCall{withID(call("todo_write", map[string]any{"todos": []map[string]string{{"content": "Say hi", "status": "in_progress"}}}), "call_plan")}},
		{ToolCalls: []scripted.ToolCall{withID(call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "}), "call_edit")}},
		{ToolCalls: []scripted.ToolCall{withID(call("run_command", map[string]any{"command": "grep -c Hi greet.go"}), "call_grep")}},
		{Text: "Greets with Hi now."},
	}})
	sample := copyFixture(t, "sample")
	greet := filepath.Join(sample, "greet.go")
	c := startACP(t, true, envFor(t, srv))
	disk, _ := os.ReadFile(greet)
	c.buffers[greet] = string(disk) + "\n// unsaved in the editor\n"
	c.answer = func(p acp.RequestPermissionRequest) string { return "allow_once" }
	session := c.newSession(sample)
	if !strings.HasPrefix(session, "s-") {
		t.Fatalf("session %q", session)
	}
	res, err := c.prompt(session, "Greet with Hi")
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	reqs := srv.Requests()
	if got := toolResult(reqs, "call_read"); !strings.Contains(got, "unsaved in the editor") {
		t.Fatalf("read_file did not read the editor's buffer: %q", got)
	}
	if got := c.written[greet]; !strings.Contains(got, `"Hi, "`) || !strings.Contains(got, "unsaved in the editor") {
		t.Fatalf("the edit written through the client: %q", got)
	}
	if got := toolResult(reqs, "call_grep"); !strings.Contains(got, "1") || strings.Contains(got, "not allowed") {
		t.Fatalf("the command's result: %q", got)
	}
	tr := c.transcript()
	for _, want := range []string{
		"agent: Reading.",
		`tool_call call_read "read_file greet.go" read in_progress`,
		"update call_read completed",
		"plan Say hi=in_progress",
		`tool_call call_edit "edit_file greet.go" edit in_progress`,
		`[diff greet.go from `,
		"update call_edit completed [diff greet.go",
		`tool_call call_grep "run_command grep -c Hi greet.go" execute in_progress`,
		`permission call_grep "" -> allow_once`,
		"update call_grep completed",
		"agent: Greets with Hi now.",
	} {
		if !strings.Contains(tr, want) {
			t.Errorf("no %q in the updates:\n%s", want, tr)
		}
	}
}

// A command the user rejects is not run, and the model is told; an edit in
// review mode is shown as a diff first and, rejected, never written.
func TestACPRejected(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{withID(call("run_command", map[string]any{"command": "touch pwned"}), "call_touch")}},
		{ToolCalls: []scripted.ToolCall{withID(call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Bye, "}), "call_edit")}},
		{Text: "Stopped."},
	}})
	sample := copyFixture(t, "sample")
	before, _ := os.ReadFile(filepath.Join(sample, "greet.go"))
	c := startACP(t, false, envFor(t, srv))
	session := c.newSession(sample)
	if _, err := c.conn.SetSessionMode(c.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(session), ModeId: "review"}); err != nil {
		t.Fatal(err)
	}
	c.answer = func(p acp.RequestPermissionRequest) string {
		if p.ToolCall.ToolCallId == "call_edit" && (len(p.ToolCall.Content) == 0 || p.ToolCall.Content[0].Diff == nil) {
			t.Errorf("the review question shows no diff: %+v", p.ToolCall)
		}
		for _, o := range p.Options {
			if o.Kind == acp.PermissionOptionKindRejectOnce {
				return string(o.OptionId)
			}
		}
		return ""
	}
	res, err := c.prompt(session, "Touch a file and say bye")
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	reqs := srv.Requests()
	if got := toolResult(reqs, "call_touch"); !strings.Contains(got, "the user denied it") {
		t.Fatalf("the rejected command's result: %q", got)
	}
	if _, err := os.Stat(filepath.Join(sample, "pwned")); err == nil {
		t.Fatal("the rejected command ran")
	}
	if got := toolResult(reqs, "call_edit"); !strings.Contains(got, "rejected") {
		t.Fatalf("the rejected edit's result: %q", got)
	}
	if after, _ := os.ReadFile(filepath.Join(sample, "greet.go")); string(after) != string(before) {
		t.Fatalf("the rejected edit was written:\n%s", after)
	}
	tr := c.transcript()
	for _, want := range []string{"permission call_touch", "update call_touch failed", "permission call_edit", "update call_edit failed"} {
		if !strings.Contains(tr, want) {
			t.Errorf("no %q in:\n%s", want, tr)
		}
	}
}

// session/cancel ends the prompt with stop reason cancelled and leaves no
// tool call in progress; a new process loads the session, replaying its
// conversation, in the mode it was prompted in, and the session continues
// there.
func TestACPCancelAndLoad(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{Text: "Sleeping.", ToolCalls: []scripted.ToolCall{withID(call("run_command", map[string]any{"command": "sleep 600"}), "call_sleep")}},
		{Text: "Still here."},
	}})
	sample := copyFixture(t, "sample")
	env := envFor(t, srv, daemonEnv...) // two processes on one store
	c := startACP(t, true, env, "--allow", "sleep *")
	session := c.newSession(sample)
	if _, err := c.conn.SetSessionMode(c.ctx(), acp.SetSessionModeRequest{SessionId: acp.SessionId(session), ModeId: "review"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan acp.PromptResponse, 1)
	go func() {
		res, err := c.prompt(session, "Sleep a while")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		done <- res
	}()
	c.waitFor(`tool_call call_sleep "run_command sleep 600" execute in_progress`)
	if err := c.conn.Cancel(c.ctx(), acp.CancelNotification{SessionId: acp.SessionId(session)}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.StopReason != acp.StopReasonCancelled {
			t.Fatalf("stop reason %q", res.StopReason)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the cancelled prompt did not end")
	}
	c.waitFor("update call_sleep failed")

	// A new process: session/load replays the conversation, then the session goes on.
	d := startACP(t, true, env, "--allow", "sleep *")
	loaded, err := d.conn.LoadSession(d.ctx(), acp.LoadSessionRequest{SessionId: acp.SessionId(session), Cwd: sample, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	if loaded.Modes == nil || loaded.Modes.CurrentModeId != "review" {
		t.Fatalf("the loaded session's modes: %+v, want review, the mode it was prompted in", loaded.Modes)
	}
	tr := d.transcript()
	for _, want := range []string{"user: Sleep a while", "agent: Sleeping.", `tool_call call_sleep "run_command sleep 600" execute`} {
		if !strings.Contains(tr, want) {
			t.Errorf("the replay lacks %q:\n%s", want, tr)
		}
	}
	res, err := d.prompt(session, "Are you there?")
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt after load: %+v %v", res, err)
	}
	d.waitFor("agent: Still here.")
	last := srv.Requests()[len(srv.Requests())-1]
	var saw bool
	for _, m := range last.Messages {
		saw = saw || strings.Contains(m.Content, "Sleep a while")
	}
	if !saw {
		t.Fatal("the loaded session's next request lacks its history")
	}
	if _, err := d.conn.LoadSession(d.ctx(), acp.LoadSessionRequest{SessionId: "s-nope", Cwd: sample, McpServers: []acp.McpServer{}}); err == nil || !strings.Contains(err.Error(), "no session s-nope") {
		t.Fatalf("loading an unknown session: %v", err)
	}
}

// A session started over ACP is listed and continued by an LSP client of
// the same store, and one started over LSP loads over ACP.
func TestACPSessionsCrossToLSP(t *testing.T) {
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "From ACP", Turns: []scripted.Turn{{Text: "Hello from ACP."}, {Text: "Continued in the editor."}}},
		{Match: "From LSP", Turns: []scripted.Turn{{Text: "Hello from LSP."}}},
	}})
	sample := copyFixture(t, "sample")
	env := envFor(t, srv, daemonEnv...) // the ACP and LSP processes share the store through the daemon
	a := startACP(t, false, env)
	acpSession := a.newSession(sample)
	if res, err := a.prompt(acpSession, "From ACP"); err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	list, err := a.conn.ListSessions(a.ctx(), acp.ListSessionsRequest{Cwd: &sample})
	if err != nil || len(list.Sessions) != 1 || string(list.Sessions[0].SessionId) != acpSession {
		t.Fatalf("session/list: %+v %v", list, err)
	}

	l := startServer(t, env...)
	l.initialize(map[string]string{"sample": sample}, nil)
	var sessions []struct {
		Session string `json:"session"`
	}
	if err := l.command("agent.sessions", map[string]any{}, &sessions); err != nil || len(sessions) != 1 || sessions[0].Session != acpSession {
		t.Fatalf("agent.sessions: %+v %v", sessions, err)
	}
	var res runResult
	if err := l.command("agent.run", map[string]any{"session": acpSession, "prompt": "From ACP, go on"}, &res); err != nil || res.Reply != "Continued in the editor." {
		t.Fatalf("agent.run on the ACP session: %+v %v", res, err)
	}
	if err := l.command("agent.run", map[string]any{"prompt": "From LSP"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := a.conn.LoadSession(a.ctx(), acp.LoadSessionRequest{SessionId: acp.SessionId(res.Session), Cwd: sample, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load of the LSP session: %v", err)
	}
	a.waitFor("agent: Hello from LSP.")
}

// A session/new mcpServers entry starts without an approval question; its
// tool reaches the model, and its first call asks like a command.
func TestACPMCPServers(t *testing.T) {
	bin := mcpTestServer(t)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{withID(call("mcp__tools__echo", map[string]any{"text": "via acp"}), "call_echo")}},
		{Text: "Echoed."},
	}})
	sample := copyFixture(t, "sample")
	c := startACP(t, false, envFor(t, srv))
	c.answer = func(acp.RequestPermissionRequest) string { return "allow_once" }
	session := c.newSession(sample, acp.McpServer{Stdio: &acp.McpServerStdio{Name: "tools", Command: bin, Args: []string{}, Env: []acp.EnvVariable{}}})
	if res, err := c.prompt(session, "Echo via MCP"); err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	if got := toolResult(srv.Requests(), "call_echo"); !strings.Contains(got, "via acp") {
		t.Fatalf("the MCP tool's result: %q", got)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asked) != 1 || c.asked[0].ToolCall.ToolCallId != "call_echo" {
		t.Fatalf("questions: %+v", c.asked)
	}
}

// startRawACP starts agent-lsp acp with env and returns a way to send it raw
// lines (CWD in a line stands for cwd) and to wait for the answer to a
// request id (a minute at most). The server's stderr is logged if the test
// fails.
func startRawACP(t *testing.T, env []string, cwd string) (send func(line string), answer func(id float64) map[string]any) {
	t.Helper()
	cmd := exec.Command(binary, "acp")
	cmd.Env = append(append(os.Environ(), "AGENT_LSP_DAEMON=off", "AGENT_LSP_VISION=true"), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	answers := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["id"] != nil {
				answers <- m
			}
		}
		close(answers)
	}()
	send = func(line string) {
		if _, err := io.WriteString(stdin, strings.ReplaceAll(line, "CWD", cwd)+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	answer = func(id float64) map[string]any {
		t.Helper()
		timeout := time.After(60 * time.Second)
		for {
			select {
			case m, ok := <-answers:
				if !ok {
					t.Fatalf("the server closed its output; stderr:\n%s", stderr.String())
				}
				if m["id"] == id {
					return m
				}
			case <-timeout:
				t.Fatalf("no answer to request %v", id)
			}
		}
	}
	return send, answer
}

// A broken or hostile client's lines (testdata/hostile/acp-requests.json)
// get error answers naming the problem, and the server keeps serving: a
// prompt with a broken image (a PNG cut after its signature) is refused,
// then a session works.
func TestACPHostileRequests(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "Still serving."}}})
	sample := copyFixture(t, "sample")
	var fixture struct {
		Requests []struct {
			Raw     string
			Request json.RawMessage
			Want    string
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "testdata", "hostile", "acp-requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fixture); err != nil {
		t.Fatal(err)
	}
	send, answer := startRawACP(t, envFor(t, srv), sample)
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	answer(0)
	for _, r := range fixture.Requests {
		line := r.Raw
		if r.Request != nil {
			var compact bytes.Buffer
			json.Compact(&compact, r.Request)
			line = compact.String()
		}
		send(line)
		var m struct {
			ID *float64 `json:"id"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.ID == nil || r.Want == "" {
			continue
		}
		got, _ := json.Marshal(answer(*m.ID)["error"])
		if !strings.Contains(string(got), r.Want) {
			t.Errorf("%s\n  answered %s, want an error with %q", line, got, r.Want)
		}
	}
	send(`{"jsonrpc":"2.0","id":100,"method":"session/new","params":{"cwd":"CWD","mcpServers":[]}}`)
	res := answer(100)
	session, _ := res["result"].(map[string]any)["sessionId"].(string)
	send(`{"jsonrpc":"2.0","id":101,"method":"session/prompt","params":{"sessionId":"` + session + `","prompt":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]}}`)
	if got, _ := json.Marshal(answer(101)["error"]); !strings.Contains(string(got), "pasted image: a broken png image") {
		t.Errorf("an image prompt: %s", got)
	}
	send(`{"jsonrpc":"2.0","id":102,"method":"session/prompt","params":{"sessionId":"` + session + `","prompt":[{"type":"text","text":"Are you still serving?"}]}}`)
	if got, _ := json.Marshal(answer(102)["result"]); !strings.Contains(string(got), `"stopReason":"end_turn"`) {
		t.Fatalf("the prompt after the hostile lines: %s", got)
	}
}

// A failed run's reason is the error's message; --workspace folders given
// relative to the client's directory open through the daemon too (it
// resolves them in its own directory otherwise).
func TestACPFailedRunAndRelativeWorkspace(t *testing.T) {
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "Fail", Turns: []scripted.Turn{{Error: &scripted.HTTPError{Status: 400, Message: "the model refused the request"}}}},
		{Match: "Read the other", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{withID(call("read_file", map[string]any{"path": "index.js", "project": "other"}), "call_other")}},
			{Text: "Read it."},
		}},
	}})
	dir := t.TempDir()
	for _, name := range []string{"sample", "other"} {
		if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Join("..", "testdata", "workspaces", name))); err != nil {
			t.Fatal(err)
		}
	}
	c := startACPIn(t, dir, false, envFor(t, srv, daemonEnv...), "--workspace", "other")
	session := c.newSession(filepath.Join(dir, "sample"))
	if _, err := c.prompt(session, "Fail please"); err == nil || !strings.Contains(err.Error(), "the model refused the request") {
		t.Fatalf("a failed run: %v", err)
	}
	other := c.newSession(filepath.Join(dir, "sample"))
	if res, err := c.prompt(other, "Read the other project's index.js"); err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	if got := toolResult(srv.Requests(), "call_other"); strings.Contains(got, "error") || got == "" {
		t.Fatalf("reading the --workspace folder's file: %q", got)
	}
}

// A long prompt at scale: 40 turns of three parallel reads, then three
// commands in one turn that each ask; every tool call ends completed, each
// question names its own call, and the updates stay in order.
func TestACPManyParallelToolCalls(t *testing.T) {
	var turns []scripted.Turn
	for i := range 40 {
		var calls []scripted.ToolCall
		for j := range 3 {
			calls = append(calls, withID(call("read_file", map[string]any{"path": "greet.go"}), fmt.Sprintf("call_%d_%d", i, j)))
		}
		turns = append(turns, scripted.Turn{ToolCalls: calls})
	}
	turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{
		withID(call("run_command", map[string]any{"command": "echo one"}), "call_one"),
		withID(call("run_command", map[string]any{"command": "echo two"}), "call_two"),
		withID(call("run_command", map[string]any{"command": "echo three"}), "call_three"),
	}}, scripted.Turn{Text: "All read."})
	srv := model(t, scripted.Script{Turns: turns})
	sample := copyFixture(t, "sample")
	c := startACP(t, true, envFor(t, srv), "--max-steps", "200", "--context-tokens", "1000000") // no compaction: it would take a scripted turn
	c.answer = func(acp.RequestPermissionRequest) string { return "allow_once" }
	session := c.newSession(sample)
	if res, err := c.prompt(session, "Read it a lot"); err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	tr := c.transcript()
	for i := range 40 {
		for j := range 3 {
			id := fmt.Sprintf("call_%d_%d", i, j)
			start, end := strings.Index(tr, "tool_call "+id+" "), strings.Index(tr, "update "+id+" completed")
			if start < 0 || end < start {
				t.Fatalf("%s: started at %d, completed at %d:\n%s", id, start, end, tr)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	asked := map[string]bool{}
	for _, p := range c.asked {
		asked[string(p.ToolCall.ToolCallId)] = true
	}
	if len(c.asked) != 3 || !asked["call_one"] || !asked["call_two"] || !asked["call_three"] {
		t.Fatalf("questions: %v", asked)
	}
	if n := strings.Count(tr, " completed"); n != 123 {
		t.Fatalf("%d tool calls completed, want 123:\n%s", n, tr)
	}
}
