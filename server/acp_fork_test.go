//go:build unix

package server_test

import (
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// A session made by agent.fork loads over ACP (session/load) and replays
// the original's conversation before prompt N only; a prompt then goes on
// from there: the model's request holds prompt 1, not prompt 2.
func TestACPLoadsAFork(t *testing.T) {
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{
		// the fork's conversation starts with the same prompt: its answer is this one's third turn
		{Match: "First prompt", Turns: []scripted.Turn{{Text: "First done."}, {Text: "Second done."}, {Text: "Forked answer."}}},
	}})
	sample := copyFixture(t, "sample")
	env := envFor(t, srv, daemonEnv...) // the LSP and ACP processes share the store through the daemon
	l := startServer(t, env...)
	l.initialize(map[string]string{"sample": sample}, nil)
	var res runResult
	if err := l.command("agent.run", map[string]any{"prompt": "First prompt"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("first run: %+v %v", res, err)
	}
	session := res.Session
	if err := l.command("agent.run", map[string]any{"prompt": "Second prompt", "session": session}, &res); err != nil || res.Reply != "Second done." {
		t.Fatalf("second run: %+v %v", res, err)
	}
	var fork struct{ Session string }
	if err := rcommand(l, "agent.fork", map[string]any{"session": session, "checkpoint": 2}, &fork); err != nil || fork.Session == "" {
		t.Fatalf("fork: %+v %v", fork, err)
	}
	a := startACP(t, false, env)
	if _, err := a.conn.LoadSession(a.ctx(), acp.LoadSessionRequest{SessionId: acp.SessionId(fork.Session), Cwd: sample, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load of the fork: %v", err)
	}
	a.waitFor("agent: First done.")
	tr := a.transcript()
	if !strings.Contains(tr, "user: First prompt") || strings.Contains(tr, "Second") {
		t.Fatalf("the fork's replay holds more or less than prompt 1:\n%s", tr)
	}
	if r, err := a.prompt(fork.Session, "Go on from the fork"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt on the loaded fork: %+v %v", r, err)
	}
	a.waitFor("agent: Forked answer.")
	if h := lastRequest(srv); !strings.Contains(h, "First prompt") || strings.Contains(h, "Second") {
		t.Fatalf("the fork's next request:\n%s", h)
	}
}

// lastRequest is the model's newest request's messages, one per line.
func lastRequest(srv *scripted.Server) string {
	reqs := srv.Requests()
	var lines []string
	for _, m := range reqs[len(reqs)-1].Messages {
		lines = append(lines, m.Content)
	}
	return strings.Join(lines, "\n")
}
