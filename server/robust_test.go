//go:build unix

package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/server/lsptest"
)

// rawClient writes frames by hand (lsptest.Raw), to send what a
// well-behaved client cannot; in takes bytes that are no frame at all.
type rawClient struct {
	t   *testing.T
	in  io.WriteCloser
	raw *lsptest.Raw
	cmd *exec.Cmd
}

func startRaw(t *testing.T, env []string) *rawClient {
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	return &rawClient{t: t, in: in, raw: lsptest.NewRaw(out, in), cmd: cmd}
}

func (r *rawClient) send(body string) { r.raw.Send(body) }

// read returns the next message from the server, skipping notifications.
func (r *rawClient) read() map[string]any {
	r.t.Helper()
	m, err := r.raw.Read()
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return m
}

// next returns the next message from the server, notifications included,
// or the error that ended the stream (io.EOF once the server exited).
func (r *rawClient) next() (map[string]any, error) { return r.raw.Next() }

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0
	}
	return int(e["code"].(float64))
}

func TestBadInput(t *testing.T) {
	srv := model(t, scripted.Script{})
	r := startRaw(t, envFor(t, srv))
	// Before initialize, requests are refused.
	r.send(`{"jsonrpc":"2.0","id":1,"method":"workspace/executeCommand","params":{"command":"agent.projects"}}`)
	if m := r.read(); errCode(m) != -32002 {
		t.Fatalf("request before initialize: %v", m)
	}
	sample := copyFixture(t, "sample")
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"processId":null,"rootUri":%q,"capabilities":{}}}`, uri.File(sample)))
	if m := r.read(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`)
	big := `{"jsonrpc":"2.0","id":99,"method":"workspace/executeCommand","params":{"command":"agent.run","arguments":[{"prompt":"` + strings.Repeat("x", 33<<20) + `"}]}}`
	cmd := func(id int, command string, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"workspace/executeCommand","params":{"command":%q,"arguments":[%s]}}`, id, command, args)
	}
	cases := []struct {
		name  string
		frame string
		code  int // 0: no answer expected (a notification)
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":10,"method":`, -32700},
		{"not an object", `42`, -32600},
		{"unknown method", `{"jsonrpc":"2.0","id":11,"method":"textDocument/hover","params":{}}`, -32601},
		{"unknown notification", `{"jsonrpc":"2.0","method":"custom/whatever","params":{}}`, 0},
		{"notification with bad params", `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":42}}`, 0},
		{"Neovim 0.7 removed:[{}]", `{"jsonrpc":"2.0","method":"workspace/didChangeWorkspaceFolders","params":{"event":{"added":[],"removed":[{}]}}}`, 0},
		{"params of the wrong type", `{"jsonrpc":"2.0","id":12,"method":"workspace/executeCommand","params":{"command":"agent.run","arguments":"fix it"}}`, -32602},
		{"argument of the wrong type", cmd(13, "agent.run", `{"prompt":42}`), -32602},
		{"unknown command", cmd(14, "agent.fly", `{}`), -32602},
		{"missing prompt", cmd(15, "agent.run", `{}`), -32602},
		{"unknown session", cmd(16, "agent.session", `{"session":"nope"}`), -32602},
		{"unknown project", cmd(17, "agent.run", `{"prompt":"x","project":"nope"}`), -32602},
		{"resume without session", cmd(18, "agent.resume", `{}`), -32602},
		{"unknown session to resume", cmd(19, "agent.resume", `{"session":"nope"}`), -32602},
		{"bad edit mode", cmd(20, "agent.run", `{"prompt":"x","edits":"yolo"}`), -32602},
		{"bad durability", cmd(22, "agent.run", `{"prompt":"x","durability":"eventually"}`), -32602},
		{"oversized message", big, -32600},
		{"second initialize", `{"jsonrpc":"2.0","id":21,"method":"initialize","params":{"capabilities":{}}}`, -32600},
	}
	for i, c := range cases {
		r.send(c.frame)
		if c.code != 0 {
			m := r.read()
			if errCode(m) != c.code {
				t.Fatalf("%s: got %v, want code %d", c.name, m, c.code)
			}
			if msg := m["error"].(map[string]any)["message"].(string); msg == "" {
				t.Fatalf("%s: empty error message", c.name)
			}
		}
		// The server keeps serving: a valid request right after works.
		id := 1000 + i
		r.send(cmd(id, "agent.projects", `{}`))
		m := r.read()
		if m["id"].(float64) != float64(id) || m["result"] == nil {
			t.Fatalf("after %s: %v", c.name, m)
		}
	}
}

// TestOrdering interleaves 20,000 didChange notifications with requests and
// folder changes; every request must see exactly what came before it.
func TestOrdering(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "log.txt"})}},
		{Text: "read"},
	}})
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": sample}, nil)
	path := filepath.Join(sample, "log.txt")
	os.WriteFile(path, nil, 0o644)
	ctx := context.Background()
	u := string(uri.File(path))
	c.conn.Notify(ctx, "textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": u, "languageId": "text", "version": 0, "text": ""}})
	folders := 0
	for i := 1; i <= 20000; i++ {
		line := strconv.Itoa(i) + "\n"
		c.conn.Notify(ctx, "textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": u, "version": i},
			"contentChanges": []any{map[string]any{"range": map[string]any{"start": map[string]any{"line": i - 1, "character": 0}, "end": map[string]any{"line": i - 1, "character": 0}}, "text": line}},
		})
		if i%1000 == 0 {
			dir := t.TempDir()
			c.conn.Notify(ctx, "workspace/didChangeWorkspaceFolders", map[string]any{"event": map[string]any{
				"added": []any{map[string]any{"uri": string(uri.File(dir)), "name": fmt.Sprint("f", i)}}, "removed": []any{}}})
			folders++
			var projects []map[string]any
			if err := c.command("agent.projects", map[string]any{}, &projects); err != nil {
				t.Fatal(err)
			}
			if len(projects) != 1+folders {
				t.Fatalf("after %d changes: %d projects, want %d", i, len(projects), 1+folders)
			}
		}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "read the log", "project": "sample"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	msgs := srv.Requests()[1].Messages
	got := msgs[len(msgs)-1].Content
	// The middle of a long read is cut to the tool-output limit; head and tail stay.
	for _, needle := range []string{"    1| 1\n    2| 2\n    3| 3\n", "19999| 19999\n20000| 20000\n"} {
		if !strings.Contains(got, needle) {
			t.Fatalf("buffer after 20,000 ordered changes lacks %q", needle)
		}
	}
	if !strings.Contains(got, "(20000 lines)") {
		t.Fatalf("buffer has the wrong length: %.100q", got)
	}
}

func TestFiftyThousandRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	srv := model(t, scripted.Script{})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	start := time.Now()
	for i := 0; i < 50000; i++ {
		var out map[string]bool
		if err := c.command("agent.cancel", map[string]any{"session": "none"}, &out); err == nil || !strings.Contains(err.Error(), "unknown session") {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	t.Logf("50,000 requests in %s", time.Since(start))
	var projects []map[string]any
	if err := c.command("agent.projects", map[string]any{}, &projects); err != nil || len(projects) != 1 {
		t.Fatalf("after 50,000 requests: %v %v", projects, err)
	}
}

// Malformed frame headers never end the server: the reader answers with an
// error and resynchronizes at the next Content-Length; an oversized frame is
// refused before its body is read; a request id already in flight is refused.
func TestBadFrames(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Delay: scripted.Duration(2 * time.Second), Text: "slow answer"}}})
	r := startRaw(t, envFor(t, srv))
	sample := copyFixture(t, "sample")
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":%q,"capabilities":{}}}`, uri.File(sample)))
	r.read()
	projects := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"workspace/executeCommand","params":{"command":"agent.projects","arguments":[{}]}}`, id)
	}
	var fixture struct{ Headers []string }
	b, err := os.ReadFile(filepath.Join("..", "testdata", "hostile", "bad-frames.json"))
	if err != nil || json.Unmarshal(b, &fixture) != nil || len(fixture.Headers) == 0 {
		t.Fatalf("bad-frames.json: %v", err)
	}
	body := projects(50)
	for i, header := range fixture.Headers {
		io.WriteString(r.in, header+body)
		if m := r.read(); errCode(m) != -32700 || !strings.Contains(fmt.Sprint(m["error"]), "skipped to the next Content-Length") {
			t.Fatalf("case %d: %v", i, m)
		}
		id := 100 + i
		r.send(projects(id))
		if m := r.read(); m["result"] == nil || int(m["id"].(float64)) != id {
			t.Fatalf("after bad header %d the server did not serve: %v", i, m)
		}
	}
	// An oversized frame is refused by its header: the answer carries the id
	// its start shows, and the body is skipped.
	huge := `{"jsonrpc":"2.0","id":77,"method":"workspace/executeCommand","params":{"command":"agent.run","arguments":[{"prompt":"` + strings.Repeat("x", 40<<20) + `"}]}}`
	r.send(huge)
	if m := r.read(); errCode(m) != -32600 || int(m["id"].(float64)) != 77 || !strings.Contains(fmt.Sprint(m["error"]), "over the") {
		t.Fatalf("oversized: %v", m)
	}
	// A request id already in flight is refused; the first request still ends.
	run := `{"jsonrpc":"2.0","id":88,"method":"workspace/executeCommand","params":{"command":"agent.run","arguments":[{"prompt":"slow"}]}}`
	r.send(run)
	for range 2 { // the answer to the first duplicate does not end the original's time in flight
		r.send(run)
		first := r.read()
		if errCode(first) != -32600 || !strings.Contains(fmt.Sprint(first["error"]), "already in flight") {
			t.Fatalf("duplicate id: %v", first)
		}
	}
	if m := r.read(); m["result"] == nil || int(m["id"].(float64)) != 88 {
		t.Fatalf("the first request with that id: %v", m)
	}
	r.send(projects(200))
	if m := r.read(); m["result"] == nil {
		t.Fatalf("still serving: %v", m)
	}
	// Once answered, an id is free again, numbers and strings alike (escaped
	// ones included): the server keeps no answered request.
	for _, id := range []string{"88", "200", `"abc"`, `"a\"b\u00e9"`, "\"a\xffb\""} {
		for range 2 {
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"workspace/executeCommand","params":{"command":"agent.projects","arguments":[{}]}}`, id))
			if m := r.read(); m["result"] == nil {
				t.Fatalf("id %s used again after its answer: %v", id, m)
			}
		}
	}
}

// Binary junk between frames (2 KiB, newlines included) costs the client
// at most a ParseError: the valid request after it is answered. It used to
// be dropped silently with the junk's header block.
func TestJunkBeforeARequest(t *testing.T) {
	srv := model(t, scripted.Script{})
	r := startRaw(t, envFor(t, srv))
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":%q,"capabilities":{}}}`, uri.File(copyFixture(t, "sample"))))
	r.read()
	junk, err := os.ReadFile(filepath.Join("..", "testdata", "hostile", "junk-2k.bin"))
	if err != nil {
		t.Fatal(err)
	}
	r.in.Write(junk)
	r.send(`{"jsonrpc":"2.0","id":300,"method":"workspace/executeCommand","params":{"command":"agent.projects","arguments":[{}]}}`)
	for {
		m := r.read()
		if m["id"] == nil && errCode(m) == -32700 {
			continue // the junk's own header block
		}
		if id, _ := m["id"].(float64); id != 300 || m["result"] == nil {
			t.Fatalf("after junk: %v", m)
		}
		return
	}
}
