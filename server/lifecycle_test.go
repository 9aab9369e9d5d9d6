//go:build unix

package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
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
	checkNoDuplicates(t, v)
	calls := map[string]bool{}
	for _, m := range v.Messages {
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

// cancelRun cancels the running agent.run (the client's second call, on
// progress token "tok") of session in one of three ways: how is
// "cancelRequest", "progressCancel" or "agentCancel".
func cancelRun(t *testing.T, c *lspClient, how, session string) {
	t.Helper()
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
}

func TestCancelThreeWays(t *testing.T) {
	for _, how := range []string{"cancelRequest", "progressCancel", "agentCancel"} {
		t.Run(how, func(t *testing.T) {
			srv := model(t, scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 600"})}},
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
				err := c.conn.Call(ctx, "workspace/executeCommand", map[string]any{"command": "agent.run", "workDoneToken": "tok",
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
			cancelRun(t, c, how, session)
			var o out
			select {
			case o = <-done:
			case <-time.After(time.Minute): // the command sleeps ten minutes
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

// crashScript is a run of n read_file calls, one per turn, then an answer. It
// answers by history (see scripted.Conversation.ByHistory), so a resumed run
// that lost steps is answered as the uninterrupted run was.
func crashScript(n int) scripted.Script {
	turns := make([]scripted.Turn, 0, n+1)
	for i := range n {
		tc := call("read_file", map[string]any{"path": "greet.go", "start_line": 1 + i%5})
		tc.ID = fmt.Sprintf("call_%03d", i)
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{tc}})
	}
	turns = append(turns, scripted.Turn{Text: "finished after the restart"})
	return scripted.Script{Turns: turns, ByHistory: true}
}

// checkNoDuplicates fails on duplicated message IDs. An interrupted run's
// transcript may end with an unanswered call (resume runs it), but never
// holds a message twice.
func checkNoDuplicates(t *testing.T, v sessionView) {
	t.Helper()
	ids := map[string]bool{}
	for _, m := range v.Messages {
		if ids[m.ID] {
			t.Fatalf("duplicated message %s", m.ID)
		}
		ids[m.ID] = true
	}
}

// reportedItem is one message as the client saw it reported before a kill:
// a message event (human, ai) or a tool.end (the tool message answering callId).
type reportedItem struct{ role, key string }

// reportedItems lists what the events reported, in order.
func reportedItems(evs []map[string]any) []reportedItem {
	var out []reportedItem
	for _, e := range evs {
		switch e["type"] {
		case "message":
			m := e["message"].(map[string]any)
			out = append(out, reportedItem{m["role"].(string), m["id"].(string)})
		case "tool.end":
			out = append(out, reportedItem{"tool", e["callId"].(string)})
		}
	}
	return out
}

func storedItems(v sessionView) []reportedItem {
	var out []reportedItem
	for _, m := range v.Messages {
		if m.Role == "tool" {
			out = append(out, reportedItem{"tool", m.ToolCallID})
		} else {
			out = append(out, reportedItem{m.Role, m.ID})
		}
	}
	return out
}

// listedSession is one row of agent.sessions.
type listedSession struct {
	Session string `json:"session"`
	Status  string `json:"status"`
}

// checkSurvivors checks what a kill left of session in the durability mode:
// one interrupted session whose stored messages agree with the reported ones
// as far as both go, with at most maxLost reported messages lost.
func checkSurvivors(t *testing.T, c2 *lspClient, list []listedSession, session string, reported []reportedItem, durability string, maxLost int) {
	t.Helper()
	if len(list) != 1 || list[0].Session != session || list[0].Status != "interrupted" {
		t.Fatalf("sessions after kill: %+v", list)
	}
	var v sessionView
	if err := c2.command("agent.session", map[string]any{"session": session}, &v); err != nil {
		t.Fatal(err)
	}
	checkNoDuplicates(t, v)
	stored := storedItems(v)
	// Events and checkpoints leave the server on goroutines of their
	// own, so a kill can come after a step was committed and before
	// its events were written: then what was reported is a prefix of
	// what was stored. Either way the two agree as far as both go.
	common := min(len(stored), len(reported))
	if !slices.Equal(stored[:common], reported[:common]) {
		t.Fatalf("stored and reported messages differ:\nstored   %v\nreported %v", stored, reported)
	}
	lost := max(len(reported)-len(stored), 0)
	if lost > maxLost {
		t.Fatalf("%s lost %d reported messages (of %d); it promises at most %d", durability, lost, len(reported), maxLost)
	}
	t.Logf("%s: %d of %d reported messages survived the kill", durability, len(stored), len(reported))
}

// checkSameMessages checks that v holds want's messages (role, content and
// tool call), in order.
func checkSameMessages(t *testing.T, v, want sessionView) {
	t.Helper()
	if len(v.Messages) != len(want.Messages) {
		t.Fatalf("transcript after resume has %d messages, want %d", len(v.Messages), len(want.Messages))
	}
	for i, m := range v.Messages {
		w := want.Messages[i]
		if m.Role != w.Role || m.Content != w.Content || m.ToolCallID != w.ToolCallID {
			t.Fatalf("message %d after resume: %s %q, want %s %q", i, m.Role, m.Content, w.Role, w.Content)
		}
	}
}

// TestKillAndResume kills the server with SIGKILL in the middle of a run of 100
// tool calls, once per durability mode, and checks exactly what each mode
// promises (docs/sessions.md, "Durability"): sync loses nothing reported but the step in
// flight; batched at most the two newest groups (2 × store.BatchSteps steps);
// exit the whole unfinished run. In every mode what survives agrees with what
// was reported as far as both go (no torn step, no duplicate), and the run then
// ends with the same transcript and answer as an uninterrupted one.
func TestKillAndResume(t *testing.T) {
	const calls, killAfter = 100, 90
	script := crashScript(calls)
	// The reference: the same run, uninterrupted.
	ref := model(t, script)
	c0 := startServer(t, envFor(t, ref)...)
	c0.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{"maxSteps": 3 * calls})
	var want runResult
	if err := c0.command("agent.run", map[string]any{"prompt": "read a lot"}, &want); err != nil || want.Status != "done" {
		t.Fatalf("reference run: %+v %v", want, err)
	}
	var wantView sessionView
	c0.command("agent.session", map[string]any{"session": want.Session}, &wantView)
	if len(wantView.Messages) != 2*calls+2 {
		t.Fatalf("reference transcript has %d messages", len(wantView.Messages))
	}

	for _, tc := range []struct {
		durability string
		maxLost    int // reported items (one per step here) a kill may lose
	}{
		{"sync", 1}, // the step in flight
		{"batched", 2 * store.BatchSteps},
		{"exit", -1}, // the whole unfinished run
	} {
		t.Run(tc.durability, func(t *testing.T) {
			srv := model(t, script)
			env := envFor(t, srv)
			sample := copyFixture(t, "sample")
			opts := map[string]any{"durability": tc.durability, "maxSteps": 3 * calls}
			c := startServer(t, env...)
			c.initialize(map[string]string{"sample": sample}, opts)
			go c.command("agent.run", map[string]any{"prompt": "read a lot"}, nil)
			c.waitFor(fmt.Sprintf("tool call %d", killAfter), func() bool {
				n := 0
				for _, e := range c.events() {
					if e["type"] == "tool.start" {
						n++
					}
				}
				return n >= killAfter
			})
			c.kill()
			evs := c.events() // everything the server wrote before it died
			session := evs[0]["session"].(string)
			reported := reportedItems(evs)

			c2 := startServer(t, env...)
			c2.initialize(map[string]string{"sample": sample}, opts)
			var list []listedSession
			if err := c2.command("agent.sessions", map[string]any{}, &list); err != nil {
				t.Fatal(err)
			}
			var res runResult
			if tc.maxLost < 0 {
				// exit: nothing of the unfinished run was written.
				if len(list) != 0 {
					t.Fatalf("exit mode stored an unfinished run: %+v", list)
				}
				if err := c2.command("agent.run", map[string]any{"prompt": "read a lot"}, &res); err != nil {
					t.Fatal(err)
				}
			} else {
				checkSurvivors(t, c2, list, session, reported, tc.durability, tc.maxLost)
				if err := c2.command("agent.resume", map[string]any{"session": session}, &res); err != nil {
					t.Fatal(err)
				}
			}
			if res.Status != "done" || res.Reply != want.Reply {
				t.Fatalf("after the kill: %+v", res)
			}
			var v sessionView
			c2.command("agent.session", map[string]any{"session": res.Session}, &v)
			checkTranscript(t, v)
			checkSameMessages(t, v, wantView)
		})
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
	// Resuming a running session is refused clearly.
	var session string
	c.waitFor("a run to start", func() bool {
		for _, e := range c.events() {
			session, _ = e["session"].(string)
			return true
		}
		return false
	})
	err := c.command("agent.resume", map[string]any{"session": session}, nil)
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc2.InvalidParams || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("resume of a running session: %v", err)
	}
	r1, r2 := <-results, <-results
	if r1.Status != "done" || r2.Status != "done" || r1.Session == r2.Session {
		t.Fatalf("%+v %+v", r1, r2)
	}
	// Each edit landed in its own project only.
	var uris []string
	for _, raw := range c.edits() {
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
	case <-time.After(time.Minute): // the watchdog polls every 500 ms
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
	if len(asked) != 2 || !strings.Contains(asked[0], "in project sample:\n  echo one\n") || !strings.Contains(asked[1], "\n  echo two\n") {
		t.Fatalf("asked %q (echo one once, echo two once, rm never: the deny pattern wins)", asked)
	}
	reqs := srv.Requests()
	last := func(i int) string { m := reqs[i].Messages; return m[len(m)-1].Content }
	if !strings.Contains(last(1), "one") || !strings.Contains(last(2), "exit status 0") ||
		!strings.Contains(last(3), `running "echo two" was not allowed: the user denied it`) ||
		!strings.Contains(last(4), `running "rm -rf build" was not allowed: "rm -rf build" matches the deny rule "rm *"`) {
		t.Fatalf("tool results: %q | %q | %q | %q", last(1), last(2), last(3), last(4))
	}
}

// TestPermissionPromptsInParallelWithEvents runs 100 turns, each with a
// command that needs permission in parallel with three tools emitting events:
// the permission prompt and the event stream never wait for each other (the
// old server took two locks in opposite orders here and could deadlock).
func TestPermissionPromptsInParallelWithEvents(t *testing.T) {
	const turns = 100
	var script []scripted.Turn
	for i := range turns {
		script = append(script, scripted.Turn{ToolCalls: []scripted.ToolCall{
			withID(call("run_command", map[string]any{"command": fmt.Sprintf("echo turn-%d", i)}), fmt.Sprintf("cmd_%d", i)),
			withID(call("read_file", map[string]any{"path": "greet.go"}), fmt.Sprintf("read_%d", i)),
			withID(call("list_files", map[string]any{"pattern": "*.go"}), fmt.Sprintf("list_%d", i)),
			withID(call("search", map[string]any{"pattern": "Greet"}), fmt.Sprintf("search_%d", i)),
		}})
	}
	script = append(script, scripted.Turn{Text: "all commands ran"})
	srv := model(t, scripted.Script{Turns: script, ByHistory: true})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{"maxSteps": 2*turns + 10})
	var asked atomic.Int32
	c.askResult = func(json.RawMessage) any {
		asked.Add(1)
		return map[string]string{"title": "Allow once"}
	}
	done := make(chan runResult, 1)
	go func() {
		var res runResult
		if err := c.command("agent.run", map[string]any{"prompt": "run many commands"}, &res); err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var res runResult
	select {
	case res = <-done:
	case <-time.After(10 * time.Minute): // seconds on an idle machine; each command starts a sandbox
		t.Fatalf("hang: the run did not end; %d permission prompts answered", asked.Load())
	}
	if res.Status != "done" || res.Reply != "all commands ran" || asked.Load() != turns {
		t.Fatalf("result %+v after %d prompts, want done after %d", res, asked.Load(), turns)
	}
	results := map[string]string{} // call ID -> the tool result the model saw
	for _, req := range srv.Requests() {
		for _, m := range req.Messages {
			if m.ToolCallID != "" {
				results[m.ToolCallID] = m.Content
			}
		}
	}
	for i := range turns {
		if out := results[fmt.Sprintf("cmd_%d", i)]; !strings.Contains(out, fmt.Sprintf("turn-%d", i)) {
			t.Fatalf("turn %d: the model saw the command result %q", i, out)
		}
	}
}

// A client that sends exit right after shutdown, without waiting for its
// answer (pipelined in one write), still gets shutdown's answer, and the
// answers of the runs that shutdown cancelled, before the server exits 0.
func TestPipelinedShutdownAndExit(t *testing.T) {
	const runs = 4 // each waits for the model; shutdown cancels them all
	var turns []scripted.Turn
	for range runs {
		turns = append(turns, scripted.Turn{Delay: scripted.Duration(time.Minute), Text: "never"})
	}
	srv := model(t, scripted.Script{Turns: turns})
	r := startRaw(t, envFor(t, srv, "AGENT_LSP_DAEMON=off"))
	hang := time.AfterFunc(2*time.Minute, func() { r.cmd.Process.Kill() }) // the reads below end at EOF
	defer hang.Stop()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":%q,"capabilities":{}}}`, uri.File(copyFixture(t, "sample"))))
	r.read()
	r.send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`)
	for id := 10; id < 10+runs; id++ {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"workspace/executeCommand","params":{"command":"agent.run","arguments":[{"prompt":"wait for the model"}]}}`, id))
	}
	for started := 0; started < runs; { // the runs wait for the model
		m, err := r.next()
		if err != nil {
			t.Fatalf("before the runs started: %v", err)
		}
		if m["method"] == "agent/event" && m["params"].(map[string]any)["type"] == "run.start" {
			started++
		}
	}
	shutdown, exit := `{"jsonrpc":"2.0","id":3,"method":"shutdown"}`, `{"jsonrpc":"2.0","method":"exit"}`
	fmt.Fprintf(r.in, "Content-Length: %d\r\n\r\n%sContent-Length: %d\r\n\r\n%s", len(shutdown), shutdown, len(exit), exit)
	answers := map[float64]any{}
	for {
		m, err := r.next()
		if err != nil {
			break // EOF: the server exited
		}
		if id, ok := m["id"].(float64); ok && m["method"] == nil {
			answers[id] = m["result"]
		}
	}
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("exit code: %v", err)
	}
	if _, ok := answers[3]; !ok {
		t.Errorf("shutdown was not answered before exit; answers: %v", answers)
	}
	for id := 10; id < 10+runs; id++ {
		if res, _ := answers[float64(id)].(map[string]any); res["status"] != "cancelled" {
			t.Errorf("run %d, cancelled by shutdown, was not answered before exit: %v", id, answers[float64(id)])
		}
	}
}
