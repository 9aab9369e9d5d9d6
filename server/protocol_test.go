//go:build unix

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/protocol and the generated parts of the docs")

// protocolDir holds the golden fixtures of the wire contract, shared with the
// editors' tests (TypeScript and Lua read the same files).
const protocolDir = "../testdata/protocol"

// commandExample is one call of a command as the fixtures record it.
type commandExample struct {
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
}

// protocolScenario runs every command of the contract against the real binary
// and the scripted model, and returns what the client sent and received: the
// command examples by name and the agent/event notifications in order.
func protocolScenario(t *testing.T) (cmds map[string][]commandExample, events []json.RawMessage, requests map[string][]requestExample, paths map[string]string) {
	srv := protocolModel(t)
	roots, home, tmp, env := protocolFiles(t, srv)
	c := startServer(t, env...)
	rec := recordEditorRequests(c, roots)
	c.askResult = func(params json.RawMessage) any { // the user allows the background process (unsandboxed here, so it asks)
		if strings.Contains(string(params), "start in the background") {
			return map[string]string{"title": "Allow once"}
		}
		return map[string]string{"title": "Deny"}
	}
	c.initialize(roots, map[string]any{"permissions": map[string]any{"allow": []string{"sleep *"}},
		"model":      map[string]any{"prices": map[string]any{"scripted": map[string]float64{"input": 2.5, "output": 10}}, "vision": "true"},
		"mcpServers": map[string]any{"docs": map[string]any{"command": mcpTestServer(t)}}})

	cmds = map[string][]commandExample{}
	var mu sync.Mutex // guards cmds: the sleeping run answers while agent.cancel does
	do := func(name string, args any) json.RawMessage {
		t.Helper()
		var res json.RawMessage
		if err := c.command(name, args, &res); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		a, _ := json.Marshal(args)
		mu.Lock()
		cmds[name] = append(cmds[name], commandExample{a, res})
		mu.Unlock()
		return res
	}
	runProtocolCommands(t, c, do, roots)
	paths = map[string]string{"http://localhost:11434/v1": srv.URL, "/work/sample": roots["sample"], "/work/other": roots["other"], "/home/user": home, "/tmp": tmp}
	return cmds, c.notifications("agent/event"), rec.examples(), paths
}

// protocolModel is the scripted model of the protocol scenario: one
// conversation per prompt the scenario sends.
func protocolModel(t *testing.T) *scripted.Server {
	return model(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "Add a farewell", Turns: []scripted.Turn{
			{Text: "Looking.", ToolCalls: []scripted.ToolCall{withID(call("read_file", map[string]any{"path": "greet.go"}), "call_read")}},
			{ToolCalls: []scripted.ToolCall{withID(call("call_subagent", map[string]any{"task": "List the Go files and report their names."}), "call_sub")}},
			{ToolCalls: []scripted.ToolCall{withID(call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "}), "call_edit")}},
			{ToolCalls: []scripted.ToolCall{withID(call("definition", map[string]any{"symbol": "Greet", "path": "greet_test.go"}), "call_definition")}},
			{ToolCalls: []scripted.ToolCall{withID(call("run_command", map[string]any{"command": "sleep 0"}), "call_check")}},
			{ToolCalls: []scripted.ToolCall{withID(call("search", map[string]any{"pattern": "nomatch("}), "call_search")}},
			{Text: "Done."},
		}},
		{Match: "List the Go files", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{withID(call("list_files", map[string]any{"pattern": "*.go"}), "call_list")}},
			{Text: "greet.go, greet_test.go"},
		}},
		{Match: "Explain the selection", Turns: []scripted.Turn{{Text: "It greets."}}},
		{Match: "Sleep a while", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{withID(call("run_command", map[string]any{"command": "sleep 601", "background": true}), "call_background"),
				withID(call("run_command", map[string]any{"command": "sleep 600"}), "call_sleep")}},
			{Text: "Resumed."},
		}},
		{Match: "Fail please", Turns: []scripted.Turn{{Error: &scripted.HTTPError{Status: 400, Message: "the model refused the request"}}}},
		{Match: "Read notes.txt", Turns: readTurns(10, "notes.txt", "The notes are long.")},
		{Match: "Summarize the conversation", Turns: []scripted.Turn{{Text: "The user asked to read notes.txt repeatedly; it holds numbered notes."},
			{Text: "Still reading notes.txt."}, {Text: "Still reading notes.txt."}, {Text: "Still reading notes.txt."}}},
	}})
}

// protocolFiles makes the scenario's projects (sample with a .git and a
// slash command, other with a long notes.txt), its own home (with a user's
// slash command) and temp folder, and the server's environment; it seeds the
// store with a review-mode session.
func protocolFiles(t *testing.T, srv *scripted.Server) (roots map[string]string, home, tmp string, env []string) {
	roots = map[string]string{"sample": copyFixture(t, "sample"), "other": copyFixture(t, "other")}
	os.MkdirAll(filepath.Join(roots["sample"], ".git"), 0o755)
	os.WriteFile(filepath.Join(roots["sample"], ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	var notes strings.Builder
	for i := 0; notes.Len() < 6000; i++ {
		fmt.Fprintf(&notes, "Note %d: the handler validates request %d before it answers.\n", i, i*7)
	}
	os.WriteFile(filepath.Join(roots["other"], "notes.txt"), []byte(notes.String()), 0o644)
	// Home, temp and caches are the scenario's own, and Landlock is off (the
	// report of what it enforces depends on the kernel), so the fixtures do
	// not depend on the machine.
	home, tmp = filepath.Join(t.TempDir(), "home"), filepath.Join(t.TempDir(), "tmp")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(tmp, 0o755)
	env = envFor(t, srv, "HOME="+home, "TMPDIR="+tmp, "XDG_CACHE_HOME=", "GOCACHE=", "GOMODCACHE=", "GOPATH=",
		"npm_config_cache=", "CARGO_HOME=", "AGENT_LSP_LANDLOCK=false")
	seedReviewSession(t, env, roots["sample"])
	// Slash commands: one of the project's, one of the user's (HOME's config).
	os.MkdirAll(filepath.Join(roots["sample"], ".agents", "commands"), 0o755)
	os.WriteFile(filepath.Join(roots["sample"], ".agents", "commands", "fix.md"), []byte("---\ndescription: Fix an issue in the code\nargument-hint: <what is wrong>\n---\nFix this: $ARGUMENTS\n"), 0o644)
	os.MkdirAll(filepath.Join(home, ".config", "agent-lsp", "commands"), 0o755)
	os.WriteFile(filepath.Join(home, ".config", "agent-lsp", "commands", "standup.md"), []byte("Summarize what changed since yesterday.\n"), 0o644)
	return roots, home, tmp, env
}

// editorRequests records the server's requests to the editor (saves,
// diagnostics, language requests) and answers them as an editor would: it
// saves every document it is asked to, its language server warns about the
// edited line and finds Greet's definition.
type editorRequests struct {
	mu    sync.Mutex // guards saves and langs, appended by the client's handlers
	saves []requestExample
	langs map[string][]requestExample
}

// recordEditorRequests makes c answer and record the editor requests.
func recordEditorRequests(c *lspClient, roots map[string]string) *editorRequests {
	r := &editorRequests{langs: map[string][]requestExample{}}
	c.saveResult = func(params json.RawMessage) any { // an editor that saves every document it is asked to
		var p struct {
			URIs []string `json:"uris"`
		}
		json.Unmarshal(params, &p)
		res := map[string]any{"saved": p.URIs, "failed": []any{}}
		b, _ := json.Marshal(res)
		r.mu.Lock()
		r.saves = append(r.saves, requestExample{Params: params, Result: b})
		r.mu.Unlock()
		return res
	}
	answer := func(method string, params json.RawMessage, res any) any {
		b, _ := json.Marshal(res)
		r.mu.Lock()
		r.langs[method] = append(r.langs[method], requestExample{Params: params, Result: b})
		r.mu.Unlock()
		return res
	}
	greetURI := string(uri.File(filepath.Join(roots["sample"], "greet.go")))
	c.diagnosticsResult = func(params json.RawMessage) any { // an editor whose language server warns about the edited line
		return answer("agent/diagnostics", params, map[string]any{"settled": true, "items": []any{map[string]any{"uri": greetURI, "diagnostics": []any{
			map[string]any{"range": map[string]any{"start": map[string]int{"line": 3, "character": 8}, "end": map[string]int{"line": 3, "character": 13}},
				"severity": 2, "source": "spell", "message": "\"Hi\" is informal"}}}}})
	}
	c.languageResult = func(params json.RawMessage) any { // and finds Greet's definition
		var p struct{ Method string }
		json.Unmarshal(params, &p)
		var res any
		if p.Method == "textDocument/definition" {
			res = []any{map[string]any{"uri": greetURI, "range": map[string]any{"start": map[string]int{"line": 2, "character": 5}, "end": map[string]int{"line": 2, "character": 10}}}}
		}
		return answer("agent/languageRequest", params, res)
	}
	return r
}

// examples returns the recorded requests by method; the example of
// agent/languageRequest is the definition, not the outline before it.
func (r *editorRequests) examples() map[string][]requestExample {
	r.mu.Lock()
	defer r.mu.Unlock()
	var definitions []requestExample
	for _, e := range r.langs["agent/languageRequest"] {
		if strings.Contains(string(e.Params), "textDocument/definition") {
			definitions = append(definitions, e)
		}
	}
	return map[string][]requestExample{"agent/saveDocuments": r.saves,
		"agent/diagnostics": r.langs["agent/diagnostics"], "agent/languageRequest": definitions}
}

// runProtocolCommands sends the scenario's commands through do, in order,
// and waits for the last run to end.
func runProtocolCommands(t *testing.T, c *lspClient, do func(name string, args any) json.RawMessage, roots map[string]string) {
	session := func(res json.RawMessage) string {
		var r struct{ Session string }
		json.Unmarshal(res, &r)
		return r.Session
	}
	do("agent.projects", map[string]any{})
	do("agent.models", map[string]any{})
	do("agent.endpoint", map[string]any{})
	do("agent.mcp", map[string]any{})
	do("agent.commands", map[string]any{"project": "sample"})
	do("agent.run", map[string]any{"prompt": "/help fix", "project": "sample"}) // a built-in: answered without a run
	main := session(do("agent.run", map[string]any{"prompt": "Add a farewell to greet.go", "project": "sample"}))
	do("agent.mcp", map[string]any{}) // sample's server now runs (its first run started it); other's has not started
	greet := string(uri.File(filepath.Join(roots["sample"], "greet.go")))
	do("agent.run", map[string]any{"prompt": "Explain the selection", "uri": greet,
		"range":   map[string]any{"start": map[string]int{"line": 2, "character": 0}, "end": map[string]int{"line": 4, "character": 1}},
		"context": []map[string]any{{"uri": string(uri.File(filepath.Join(roots["sample"], "greet_test.go")))}}, "model": "scripted",
		"images": []map[string]any{{"data": onePixelPNG, "mimeType": "image/png"}}})
	failed := session(do("agent.run", map[string]any{"prompt": "Fail please", "project": "other"}))

	slept := make(chan struct{})
	go func() { defer close(slept); do("agent.run", map[string]any{"prompt": "Sleep a while"}) }()
	var sleeper string
	c.waitFor("the sleep to start", func() bool {
		for _, e := range c.events() {
			if e["type"] == "tool.start" && e["name"] == "run_command" && strings.Contains(e["args"].(string), "sleep 600") {
				sleeper = e["session"].(string)
				return true
			}
		}
		return false
	})
	c.waitFor("the background process to start", func() bool {
		var list []any
		return c.command("agent.processes", map[string]any{}, &list) == nil && len(list) > 0
	})
	do("agent.processes", map[string]any{"session": sleeper})
	do("agent.stopProcess", map[string]any{"session": sleeper, "id": "p1"})
	do("agent.run", map[string]any{"session": sleeper, "prompt": "Also say hi when you are back"})
	do("agent.cancel", map[string]any{"session": sleeper})
	<-slept
	do("agent.cancel", map[string]any{"session": sleeper})
	do("agent.resume", map[string]any{"session": sleeper})
	do("agent.sessions", map[string]any{})
	do("agent.sessions", map[string]any{"project": "other"})
	var view struct {
		Subagents []struct {
			ContextID string `json:"contextId"`
		} `json:"subagents"`
	}
	json.Unmarshal(do("agent.session", map[string]any{"session": main}), &view)
	if len(view.Subagents) != 1 {
		t.Fatalf("subagents of the first run: %+v", view.Subagents)
	}
	do("agent.session", map[string]any{"session": main, "context": view.Subagents[0].ContextID})
	do("agent.run", map[string]any{"prompt": "Read notes.txt ten times", "project": "other"})
	do("agent.switchProject", map[string]any{"session": main, "project": "other"})
	do("agent.deleteSession", map[string]any{"session": failed})
	do("agent.checkpoints", map[string]any{"session": main})
	do("agent.checkpointFile", map[string]any{"session": main, "checkpoint": 1, "uri": string(uri.File(filepath.Join(roots["sample"], "greet.go")))})
	do("agent.fork", map[string]any{"session": main, "checkpoint": 1})
	do("agent.rewind", map[string]any{"session": main, "checkpoint": 1, "restore": "both"})
	do("agent.rewind", map[string]any{"session": main, "undo": true})
	c.waitFor("the last run's end", func() bool {
		n := 0
		for _, e := range c.events() {
			if e["type"] == "run.end" {
				n++
			}
		}
		return n == 6
	})
}

// onePixelPNG is a 1×1 PNG, in base64: the image a prompt of the scenario
// carries.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAADklEQVR4nGJiAAQAAP//AAYAA/rQWa4AAAAASUVORK5CYII="

// seedReviewSession stores, before the server opens the store env names, a
// session an ACP client ran in review mode (session/set_mode): the only way
// a session gets agent.sessions' edits, which the fixtures then show.
func seedReviewSession(t *testing.T, env []string, root string) {
	t.Helper()
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "AGENT_LSP_STORE="); ok {
			path = v
		}
	}
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Now().Add(-time.Hour) // listed last
	err = db.PutSession(context.Background(), store.Session{ID: "s-01J0000000000000000000ACP0", Project: "sample", Root: root,
		Model: "scripted", Edits: "review", Title: "Review the greeting", Status: store.StatusDone, Created: at, Updated: at, Messages: 2})
	if err != nil {
		t.Fatal(err)
	}
}

// serverRequests are the agent-lsp requests the server sends the client.
var serverRequests = []string{"agent/saveDocuments", "agent/diagnostics", "agent/languageRequest"}

// requestExample is a request the server sent and the client's answer.
type requestExample struct {
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

// readTurns reads path n times, one call a turn, then answers.
func readTurns(n int, path, answer string) []scripted.Turn {
	var turns []scripted.Turn
	for i := 0; i < n; i++ {
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{withID(call("read_file", map[string]any{"path": path}), fmt.Sprintf("call_read_%d", i))}})
	}
	return append(turns, scripted.Turn{Text: answer})
}

func withID(tc scripted.ToolCall, id string) scripted.ToolCall {
	tc.ID = id
	return tc
}

// normalizer replaces what differs between runs (IDs, times, temp paths) by
// stable placeholders, the same value by the same placeholder.
type normalizer struct {
	paths map[string]string // placeholder -> the run's path
	seen  map[string]string
	count map[string]int
}

var (
	sessionID  = regexp.MustCompile(`s-[0-9A-HJKMNP-TV-Z]{26}`)
	ulid       = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
	subagentID = regexp.MustCompile(`subagent-[0-9a-f]{8}`)
	timestamp  = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
)

func (n *normalizer) placeholder(kind, v string, format string) string {
	key := kind + "\x00" + v
	if p, ok := n.seen[key]; ok {
		return p
	}
	n.count[kind]++
	p := fmt.Sprintf(format, n.count[kind])
	n.seen[key] = p
	return p
}

func (n *normalizer) text(s string) string {
	if timestamp.MatchString(s) {
		return "2026-01-01T00:00:00Z"
	}
	placeholders := sortedKeys(n.paths)
	sort.Slice(placeholders, func(i, j int) bool { return len(n.paths[placeholders[i]]) > len(n.paths[placeholders[j]]) })
	for _, p := range placeholders {
		s = strings.ReplaceAll(s, n.paths[p], p)
	}
	s = sessionID.ReplaceAllStringFunc(s, func(v string) string { return n.placeholder("session", v, "s-01SESSION%016d") })
	s = subagentID.ReplaceAllStringFunc(s, func(v string) string { return n.placeholder("subagent", v, "subagent-%08d") })
	return ulid.ReplaceAllStringFunc(s, func(v string) string { return n.placeholder("message", v, "01MESSAGE%017d") })
}

func (n *normalizer) value(v any) any {
	switch x := v.(type) {
	case string:
		return n.text(x)
	case []any:
		for i := range x {
			x[i] = n.value(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = n.value(x[k])
		}
		// Prompt sizes depend on the temporary paths in the system prompt.
		if x["type"] == "context.compacted" {
			x["before"], x["after"] = 9000, 2500
		}
		// Costs follow the scenario's price table (2.5/10 USD per million).
		price := func(prompt, completion float64) float64 { return (prompt*2.5 + completion*10) / 1e6 }
		if n, _ := x["promptTokens"].(float64); n > 0 {
			c, _ := x["completionTokens"].(float64)
			x["promptTokens"], x["totalTokens"], x["cost"] = 1000, 1000+c, price(1000, c)
		}
		if x["type"] == "usage" {
			c, _ := x["completion"].(float64)
			x["prompt"], x["total"], x["cost"] = 1000, 1000+c, price(1000, c)
			if run, ok := x["run"].(map[string]any); ok {
				rc, _ := run["completion"].(float64)
				run["prompt"], run["total"], run["cost"] = 4000, 4000+rc, price(4000, rc)
			}
		}
	}
	return v
}

func (n *normalizer) json(raw json.RawMessage) json.RawMessage {
	var v any
	json.Unmarshal(raw, &v)
	b, _ := json.Marshal(n.value(v))
	return b
}

// shape is the set of key paths present in a JSON value, so examples that
// show the same fields are kept once.
func shape(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out[prefix+"."+k] = true
			shape(e, prefix+"."+k, out)
		}
	case []any:
		for _, e := range x {
			shape(e, prefix+"[]", out)
		}
	}
}

func shapeKey(raw json.RawMessage) string {
	var v any
	json.Unmarshal(raw, &v)
	keys := map[string]bool{}
	shape(v, "", keys)
	var out []string
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// golden writes (with -update) or checks one fixture file.
func golden(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(old, b) {
		t.Errorf("%s differs from what the server sends (%v); if the change is intended, run `go test ./server -run TestProtocolFixtures -update` and update the editors.\nserver sends:\n%s", path, err, b)
	}
}

// TestProtocolFixtures records the wire contract as the real server speaks
// it: every command's arguments and results and every agent/event kind,
// normalized, under testdata/protocol. The editors' tests decode the same
// files with their own types and renderers.
func TestProtocolFixtures(t *testing.T) {
	cmds, events, requests, paths := protocolScenario(t)
	n := &normalizer{paths: paths, seen: map[string]string{}, count: map[string]int{}}
	for _, c := range server.Commands {
		examples := cmds[c.Name]
		if len(examples) == 0 {
			t.Errorf("the scenario does not call %s", c.Name)
			continue
		}
		for i := range examples {
			examples[i] = commandExample{n.json(examples[i].Arguments), n.json(examples[i].Result)}
		}
		golden(t, filepath.Join(protocolDir, "commands", c.Name+".json"), examples)
	}
	byType := map[event.Type][]json.RawMessage{}
	shapes := map[string]bool{}
	for _, raw := range events {
		var e event.Event
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("the server sent an event this binary cannot decode: %v: %s", err, raw)
		}
		norm := n.json(raw)
		key := string(e.Type()) + " " + shapeKey(norm)
		if !shapes[key] {
			shapes[key] = true
			byType[e.Type()] = append(byType[e.Type()], norm)
		}
	}
	for _, typ := range event.Types() {
		if typ == "events.dropped" {
			continue // a window that does not read: TestRunOfAWindowThatStopsReading records it
		}
		if len(byType[typ]) == 0 {
			t.Errorf("the scenario produced no %s event", typ)
			continue
		}
		golden(t, filepath.Join(protocolDir, "events", string(typ)+".json"), byType[typ])
	}
	for _, m := range serverRequests {
		if len(requests[m]) == 0 {
			t.Errorf("the scenario produced no %s request", m)
			continue
		}
		var examples []requestExample
		for _, r := range requests[m][:1] {
			examples = append(examples, requestExample{n.json(r.Params), n.json(r.Result)})
		}
		golden(t, filepath.Join(protocolDir, "requests", strings.ReplaceAll(m, "/", ".")+".json"), examples)
	}
	// Nothing stale: every fixture file is one the contract still has.
	files, _ := filepath.Glob(filepath.Join(protocolDir, "*", "*.json"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if !slices.ContainsFunc(server.Commands, func(c server.Command) bool { return c.Name == name }) &&
			!slices.Contains(event.Types(), event.Type(name)) && !slices.Contains(serverRequests, strings.ReplaceAll(name, ".", "/")) {
			t.Errorf("%s is not a command or event of the contract any more; delete it", f)
		}
	}
}
