package server_test

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

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

type sessionView struct {
	Session  string `json:"session"`
	Status   string `json:"status"`
	Messages []struct {
		ID         string `json:"id"`
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"toolCallId"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"toolCalls"`
	} `json:"messages"`
}

// checkTranscript fails on duplicated IDs and on tool calls without an answer.
func checkTranscript(t *testing.T, v sessionView) {
	t.Helper()
	ids := map[string]bool{}
	calls := map[string]bool{}
	for _, m := range v.Messages {
		if ids[m.ID] {
			t.Fatalf("duplicated message %s", m.ID)
		}
		ids[m.ID] = true
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == "tool" {
			delete(calls, m.ToolCallID)
		}
	}
	if len(calls) > 0 {
		t.Fatalf("orphan tool calls stored: %v", calls)
	}
}

func TestCancelThreeWays(t *testing.T) {
	for _, how := range []string{"cancelRequest", "progressCancel", "agentCancel"} {
		t.Run(how, func(t *testing.T) {
			srv := model(t, scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 30"})}},
				{Text: "continued after cancel"},
			}})
			c := startServer(t, envFor(t, srv)...)
			c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{"permissions": map[string]any{"allow": []string{"sleep *"}}})
			ctx, cancelCall := context.WithCancel(context.Background())
			defer cancelCall()
			type out struct {
				res runResult
				err error
			}
			done := make(chan out, 1)
			go func() {
				var res runResult
				_, err := c.conn.Call(ctx, "workspace/executeCommand", map[string]any{"command": "agent.run", "workDoneToken": "tok",
					"arguments": []any{map[string]any{"prompt": "sleep a while"}}}, &res)
				done <- out{res, err}
			}()
			var session string
			c.waitFor("tool.start", func() bool {
				for _, e := range c.events() {
					if e["type"] == "tool.start" {
						session = e["session"].(string)
						return true
					}
				}
				return false
			})
			start := time.Now()
			switch how {
			case "cancelRequest":
				// The run is this client's second call (initialize was the first).
				c.conn.Notify(context.Background(), "$/cancelRequest", map[string]any{"id": 2})
			case "progressCancel":
				c.conn.Notify(context.Background(), "window/workDoneProgress/cancel", map[string]any{"token": "tok"})
			case "agentCancel":
				var r struct {
					Cancelled bool `json:"cancelled"`
				}
				if err := c.command("agent.cancel", map[string]any{"session": session}, &r); err != nil || !r.Cancelled {
					t.Fatalf("agent.cancel: %v %v", r, err)
				}
			}
			var o out
			select {
			case o = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("run did not end after cancel")
			}
			if how == "cancelRequest" {
				var rpcErr *jsonrpc2.Error
				if !errors.As(o.err, &rpcErr) || rpcErr.Code != -32800 {
					t.Fatalf("cancelled request answered %v, want RequestCancelled", o.err)
				}
			} else if o.err != nil || o.res.Status != "cancelled" {
				t.Fatalf("result %+v err %v", o.res, o.err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("cancel took %s", d)
			}
			c.waitFor("run.end", func() bool {
				evs := c.events()
				return len(evs) > 0 && evs[len(evs)-1]["type"] == "run.end"
			})
			evs := c.events()
			if last := evs[len(evs)-1]; last["type"] != "run.end" || last["status"] != "cancelled" {
				t.Fatalf("last event %v", last)
			}
			var v sessionView
			if err := c.command("agent.session", map[string]any{"session": session}, &v); err != nil {
				t.Fatal(err)
			}
			checkTranscript(t, v)
			if v.Status != "cancelled" || len(v.Messages) != 3 || !strings.Contains(v.Messages[2].Content, "cancelled") {
				t.Fatalf("stored session: %+v", v)
			}
			// The session stays usable.
			var res runResult
			if err := c.command("agent.resume", map[string]any{"session": session}, &res); err != nil || res.Status != "done" || res.Reply != "continued after cancel" {
				t.Fatalf("resume after cancel: %+v %v", res, err)
			}
		})
	}
}

func TestKillAndResume(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "greet.go"})}},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 2"})}},
		{Text: "finished after the restart"},
	}})
	env := envFor(t, srv)
	sample := copyFixture(t, "sample")
	opts := map[string]any{"permissions": map[string]any{"allow": []string{"sleep *"}}}
	c := startServer(t, env...)
	c.initialize(map[string]string{"sample": sample}, opts)
	go c.command("agent.run", map[string]any{"prompt": "work then sleep"}, nil)
	var session string
	c.waitFor("the second tool", func() bool {
		n := 0
		for _, e := range c.events() {
			if e["type"] == "tool.start" {
				n++
				session = e["session"].(string)
			}
		}
		return n == 2
	})
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()

	c2 := startServer(t, env...)
	c2.initialize(map[string]string{"sample": sample}, opts)
	var list []struct {
		Session string `json:"session"`
		Status  string `json:"status"`
	}
	if err := c2.command("agent.sessions", map[string]any{}, &list); err != nil || len(list) != 1 || list[0].Session != session || list[0].Status != "running" {
		t.Fatalf("sessions after kill: %+v %v", list, err)
	}
	var res runResult
	if err := c2.command("agent.resume", map[string]any{"session": session}, &res); err != nil || res.Status != "done" || res.Reply != "finished after the restart" {
		t.Fatalf("resume: %+v %v", res, err)
	}
	var v sessionView
	c2.command("agent.session", map[string]any{"session": session}, &v)
	checkTranscript(t, v)
	if len(v.Messages) != 6 || v.Messages[0].Content != "work then sleep" {
		t.Fatalf("transcript after resume has %d messages: %+v", len(v.Messages), v.Messages)
	}
}

func TestBusySessionAndParallelProjects(t *testing.T) {
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "in sample", Turns: []scripted.Turn{
			{Delay: scripted.Duration(300 * time.Millisecond), ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "made-by-sample.txt", "content": "s"})}},
			{Text: "sample done"}}},
		{Match: "in other", Turns: []scripted.Turn{
			{Delay: scripted.Duration(300 * time.Millisecond), ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "made-by-other.txt", "content": "o"})}},
			{Text: "other done"}}},
	}})
	sample, other := copyFixture(t, "sample"), copyFixture(t, "other")
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": sample, "other": other}, nil)
	results := make(chan runResult, 2)
	for _, p := range []string{"sample", "other"} {
		go func() {
			var r runResult
			if err := c.command("agent.run", map[string]any{"prompt": "work in " + p, "project": p}, &r); err != nil {
				t.Error(err)
			}
			results <- r
		}()
	}
	// A second run on a running session is refused clearly.
	var session string
	c.waitFor("a run to start", func() bool {
		for _, e := range c.events() {
			session, _ = e["session"].(string)
			return true
		}
		return false
	})
	err := c.command("agent.run", map[string]any{"prompt": "again", "session": session}, nil)
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc2.InvalidParams || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second run on a running session: %v", err)
	}
	r1, r2 := <-results, <-results
	if r1.Status != "done" || r2.Status != "done" || r1.Session == r2.Session {
		t.Fatalf("%+v %+v", r1, r2)
	}
	// Each edit landed in its own project only.
	var uris []string
	for _, raw := range c.edits {
		var e struct {
			Edit struct {
				DocumentChanges []map[string]any `json:"documentChanges"`
			} `json:"edit"`
		}
		json.Unmarshal(raw, &e)
		uris = append(uris, e.Edit.DocumentChanges[0]["uri"].(string))
	}
	if len(uris) != 2 {
		t.Fatalf("edits: %v", uris)
	}
	for _, u := range uris {
		inSample := strings.HasPrefix(u, "file://"+sample+"/")
		inOther := strings.HasPrefix(u, "file://"+other+"/")
		if !(inSample && strings.HasSuffix(u, "made-by-sample.txt")) && !(inOther && strings.HasSuffix(u, "made-by-other.txt")) {
			t.Fatalf("edit crossed projects: %s", u)
		}
	}
}

func TestAPIKeyNeverShown(t *testing.T) {
	const key = "sk-live-SECRET-9f8e7d6c5b4a"
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{Error: &scripted.HTTPError{Status: 401, Message: "Incorrect API key provided: " + key}},
	}})
	storePath := filepath.Join(t.TempDir(), "s.db")
	c := startServer(t, "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+key, "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE="+storePath)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "hello"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "failed" || !strings.Contains(res.Error, "401") {
		t.Fatalf("result %+v", res)
	}
	c.call("shutdown", nil, nil)
	c.conn.Notify(context.Background(), "exit", nil)
	c.cmd.Wait()
	b, _ := json.Marshal(res)
	for what, text := range map[string]string{"result": string(b), "stderr": c.stderr.String()} {
		if strings.Contains(text, key) {
			t.Fatalf("API key in %s: %s", what, text)
		}
	}
	for _, raw := range append(c.notifications("window/logMessage"), c.notifications("agent/event")...) {
		if strings.Contains(string(raw), key) {
			t.Fatalf("API key in a notification: %s", raw)
		}
	}
	db, _ := os.ReadFile(storePath)
	if len(db) == 0 || strings.Contains(string(db), key) {
		t.Fatalf("store file (%d bytes) holds the key", len(db))
	}
	// The model did receive it, as a bearer token.
	if len(srv.Requests()) == 0 {
		t.Fatal("model never called")
	}
}

func TestExitsWhenParentDies(t *testing.T) {
	srv := model(t, scripted.Script{})
	parent := startSleeper(t)
	c := startServer(t, envFor(t, srv)...)
	var res map[string]any
	if err := c.call("initialize", map[string]any{"processId": parent.Pid, "rootUri": nil, "capabilities": map[string]any{}}, &res); err != nil {
		t.Fatal(err)
	}
	parent.Kill()
	parent.Wait()
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("server still running after its parent died")
	}
}

func startSleeper(t *testing.T) *os.Process {
	p, err := os.StartProcess("/bin/sleep", []string{"sleep", "60"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPermissionPrompt(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "echo one"})}},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "echo one"})}},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "echo two"})}},
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "rm -rf build"})}},
		{Text: "done"},
	}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{"permissions": map[string]any{"deny": []string{"rm *"}}})
	var asked []string
	c.askResult = func(p json.RawMessage) any {
		var req struct {
			Message string `json:"message"`
			Actions []struct {
				Title string `json:"title"`
			} `json:"actions"`
		}
		json.Unmarshal(p, &req)
		asked = append(asked, req.Message)
		if len(req.Actions) != 3 {
			t.Errorf("actions: %+v", req.Actions)
		}
		if strings.Contains(req.Message, "echo one") {
			return map[string]string{"title": "Always for this session"}
		}
		return map[string]string{"title": "Deny"}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "run things"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if len(asked) != 2 || !strings.Contains(asked[0], "`echo one`") || !strings.Contains(asked[1], "`echo two`") {
		t.Fatalf("asked %q (echo one once, echo two once, rm never: the deny pattern wins)", asked)
	}
	reqs := srv.Requests()
	last := func(i int) string { m := reqs[i].Messages; return m[len(m)-1].Content }
	if !strings.Contains(last(1), "one") || !strings.Contains(last(2), "exit status 0") || !strings.Contains(last(3), `denied running "echo two"`) || !strings.Contains(last(4), `denied running "rm -rf build"`) {
		t.Fatalf("tool results: %q | %q | %q | %q", last(1), last(2), last(3), last(4))
	}
}
