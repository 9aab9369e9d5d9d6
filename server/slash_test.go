//go:build unix

package server_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// customized is the sample project with a command of .agents/commands, one
// of .claude/commands and one of the user's folder ($XDG_CONFIG_HOME), and
// the environment that names that folder.
func customized(t *testing.T) (root string, env []string) {
	root = copyFixture(t, "sample")
	writeFiles(t, root, map[string]string{
		".agents/commands/fix.md":   "---\ndescription: Fix what is wrong\nargument-hint: <what is wrong>\n---\nFix this: $ARGUMENTS. Start with @greet.go.\n",
		".claude/commands/check.md": "---\ndescription: Check the tests\n---\nRun the tests and report.\n",
	})
	config := t.TempDir()
	writeFiles(t, config, map[string]string{"agent-lsp/commands/standup.md": "---\ndescription: My standup notes\n---\nSummarize what changed since $1.\n"})
	return root, []string{"XDG_CONFIG_HOME=" + config}
}

// Slash commands end to end: agent.commands lists the built-ins and every
// file with its source; /fix expands in the model's request ($ARGUMENTS,
// @greet.go attached); the user's command takes $1; /help answers without
// a model call; an unknown name is InvalidParams naming the close ones.
func TestSlashCommands(t *testing.T) {
	srv := model(t, scripted.Script{Models: []string{"scripted", "scripted-large"}, Conversations: []scripted.Conversation{
		{Match: "Fix this: the parser", Turns: []scripted.Turn{{Text: "Fixed."}, {Text: "Fixed again."}}},
		{Match: "Summarize what changed since monday", Turns: []scripted.Turn{{Text: "Little."}}},
	}})
	root, extra := customized(t)
	c := startServer(t, envFor(t, srv, extra...)...)
	c.initialize(map[string]string{"sample": root}, nil)

	var list struct {
		Commands []struct{ Name, Description, ArgumentHint, Source, Path, Error string }
	}
	var raw json.RawMessage
	if err := c.command("agent.commands", map[string]any{}, &raw); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &list)
	var got []string
	for _, cmd := range list.Commands {
		got = append(got, cmd.Source+":"+cmd.Name)
	}
	if want := []string{"builtin:help", "builtin:model", "builtin:sessions", "user:standup", "project:fix", "project:check"}; !slices.Equal(got, want) {
		t.Fatalf("agent.commands: %v, want %v\n%s", got, want, raw)
	}
	if fix := list.Commands[4]; fix.ArgumentHint != "<what is wrong>" || fix.Path != ".agents/commands/fix.md" || fix.Description != "Fix what is wrong" {
		t.Fatalf("%+v", fix)
	}

	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "/fix the parser"}, &res); err != nil || res.Status != "done" || res.Reply != "Fixed." {
		t.Fatalf("/fix: %+v %v", res, err)
	}
	human := srv.Requests()[0].Messages[1].Content
	if !strings.HasPrefix(human, "Fix this: the parser. Start with @greet.go.") || !strings.Contains(human, "(@greet.go is attached:)\n```\npackage sample") {
		t.Fatalf("the model's request: %q", human)
	}
	fixed := res.Session
	if err := c.command("agent.run", map[string]any{"prompt": "/standup monday"}, &res); err != nil || res.Reply != "Little." {
		t.Fatalf("/standup: %+v %v", res, err)
	}
	// /model NAME switches a session's next runs to a model the endpoint offers.
	if err := c.command("agent.run", map[string]any{"prompt": "/model scripted-large", "session": fixed}, &res); err != nil || res.Reply != "This session's next prompts run on scripted-large." {
		t.Fatalf("/model scripted-large: %+v %v", res, err)
	}
	if err := c.command("agent.run", map[string]any{"prompt": "/fix it again", "session": fixed}, &res); err != nil || res.Reply != "Fixed again." {
		t.Fatalf("/fix again: %+v %v", res, err)
	}
	if reqs := srv.Requests(); reqs[len(reqs)-1].Model != "scripted-large" || reqs[0].Model != "scripted" {
		t.Fatalf("models: first %q, last %q", reqs[0].Model, reqs[len(reqs)-1].Model)
	}

	calls := len(srv.Requests())
	if err := c.command("agent.run", map[string]any{"prompt": "/help"}, &res); err != nil || res.Status != "done" || res.Steps != 0 ||
		!strings.Contains(res.Reply, "- /fix <what is wrong>: Fix what is wrong (project)") || !strings.Contains(res.Reply, "- /standup: My standup notes (user)") {
		t.Fatalf("/help: %+v %v", res, err)
	}
	if err := c.command("agent.run", map[string]any{"prompt": "/model", "session": res.Session}, &res); err != nil || !strings.Contains(res.Reply, "Model: scripted") {
		t.Fatalf("/model: %+v %v", res, err)
	}
	if n := len(srv.Requests()); n != calls {
		t.Fatalf("built-ins called the model: %d requests, %d before", n, calls)
	}

	for prompt, want := range map[string]string{
		"/nope":         "unknown slash command /nope",
		"/fx the thing": "unknown slash command /fx (did you mean /fix",
		"/help nothing": "unknown slash command /nothing",
	} {
		err := c.command("agent.run", map[string]any{"prompt": prompt}, &res)
		var rpc *jsonrpc2.Error
		if !asRPC(err, &rpc) || rpc.Code != jsonrpc2.InvalidParams || !strings.Contains(rpc.Message, want) || !strings.Contains(rpc.Message, "the commands are /help, /model, /sessions, /standup, /fix, /check") {
			t.Errorf("%s: %v, want InvalidParams saying %q", prompt, err, want)
		}
	}
	err := c.command("agent.run", map[string]any{"prompt": "/model gpt-99", "session": fixed}, &res)
	var rpc *jsonrpc2.Error
	if !asRPC(err, &rpc) || rpc.Code != jsonrpc2.InvalidParams || !strings.Contains(rpc.Message, `does not offer the model "gpt-99"; it offers: scripted, scripted-large`) {
		t.Errorf("/model gpt-99: %v", err)
	}
}

func asRPC(err error, target **jsonrpc2.Error) bool { return errors.As(err, target) }

// A hostile repository's command files (testdata/hostile/custom-repo): an
// @path out of the project, a link out of it, a front matter over the limit,
// a YAML bomb, a file that tries to replace /help. Each is a clear error or
// is ignored; nothing outside the project reaches the model; the server
// keeps serving.
func TestHostileCommandFiles(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "never"}}})
	root := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "testdata", "hostile", "custom-repo"))); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"repo": root}, nil)
	var list struct {
		Commands []struct{ Name, Source, Error string }
	}
	var raw json.RawMessage
	if err := c.command("agent.commands", map[string]any{}, &raw); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &list) // encoding/json: names matched without case
	errs := map[string]string{}
	for _, cmd := range list.Commands {
		errs[cmd.Name+" "+cmd.Source] = cmd.Source + ": " + cmd.Error
	}
	for name, want := range map[string]string{
		"help builtin":   "builtin: ",
		"help project":   "project: not used: /help is built in",
		"huge project":   "project: front matter is over 8192 bytes",
		"bomb project":   "project: front matter: line 10: a name must be a string",
		"linked project": "project: openat .agents/commands/linked.md: path escapes from parent",
	} {
		if !strings.HasPrefix(errs[name], want) {
			t.Errorf("%s: %q, want %q", name, errs[name], want)
		}
	}
	for prompt, want := range map[string]string{
		"/leak":     "@../../etc/passwd: it climbs out of the project with ..; nothing was read",
		"/leak-abs": "@/etc/passwd: absolute path outside the project root",
		"/via-link": "@passwd-link: a symlink points outside the project root; nothing was read",
		"/huge":     "front matter is over 8192 bytes",
		"/bomb":     "a name must be a string",
		"/linked":   "path escapes from parent",
	} {
		var res runResult
		err := c.command("agent.run", map[string]any{"prompt": prompt}, &res)
		var rpc *jsonrpc2.Error
		if !asRPC(err, &rpc) || rpc.Code != jsonrpc2.InvalidParams || !strings.Contains(rpc.Message, want) {
			t.Errorf("%s: %v, want InvalidParams saying %q", prompt, err, want)
		}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "/help"}, &res); err != nil || strings.Contains(res.Reply, "attacker") {
		t.Fatalf("/help: %+v %v", res, err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d model requests: %+v", n, srv.Requests())
	}
}

// A subagent of .agents/agents/reviewer.md: its request has its system
// prompt, only read_file and search, and its model (subagents.models allows
// it); a nested AGENTS.md appears in the system prompt after the first read
// below it.
func TestCustomSubagentAndNestedInstructions(t *testing.T) {
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "Review greet.go", Turns: []scripted.Turn{{Text: "Looks fine."}}},
		{Match: "Review it", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "pkg/util/util.go"})}},
			{ToolCalls: []scripted.ToolCall{call("call_subagent", map[string]any{"task": "Review greet.go", "agent": "reviewer"})}},
			{Text: "Reviewed."}}},
	}})
	root := copyFixture(t, "sample")
	writeFiles(t, root, map[string]string{
		".agents/agents/reviewer.md": "---\nname: reviewer\ndescription: Reviews Go code\ntools: [read_file, search]\nmodel: reviewer-small\n---\nYou are a strict reviewer: list each problem with its line.\n",
		"pkg/util/AGENTS.md":         "In pkg/util, every function is pure.\n",
		"pkg/util/util.go":           "package util\n",
	})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": root}, map[string]any{"subagents": map[string]any{"models": []string{"reviewer-*"}}})
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "Review it"}, &res); err != nil || res.Status != "done" || res.Reply != "Reviewed." {
		t.Fatalf("%+v %v", res, err)
	}
	reqs := srv.Requests()
	var sub, main []int
	for i, r := range reqs {
		if strings.Contains(r.Messages[1].Content, "Review greet.go") {
			sub = append(sub, i)
		} else {
			main = append(main, i)
		}
	}
	if len(sub) != 1 || len(main) != 3 {
		t.Fatalf("requests: subagent %v, main %v", sub, main)
	}
	s := reqs[sub[0]]
	var tools []string
	for _, tl := range s.Tools {
		tools = append(tools, tl.Function.Name)
	}
	slices.Sort(tools)
	if !strings.Contains(s.Messages[0].Content, "You are a strict reviewer: list each problem with its line.") || !slices.Equal(tools, []string{"read_file", "search"}) || s.Model != "reviewer-small" {
		t.Fatalf("the subagent's request: model %q, tools %v, system prompt:\n%s", s.Model, tools, s.Messages[0].Content)
	}
	if reqs[main[0]].Model != "scripted" {
		t.Fatalf("the parent's model: %q", reqs[main[0]].Model)
	}
	const nested = "In pkg/util, every function is pure."
	if strings.Contains(reqs[main[0]].Messages[0].Content, nested) || !strings.Contains(reqs[main[1]].Messages[0].Content, "## Project instructions (pkg/util/AGENTS.md, repository content)\n") ||
		!strings.Contains(reqs[main[1]].Messages[0].Content, nested) {
		t.Fatalf("the nested AGENTS.md:\nfirst:\n%s\nsecond:\n%s", reqs[main[0]].Messages[0].Content, reqs[main[1]].Messages[0].Content)
	}
}

// Over ACP: the session's commands arrive as available_commands_update
// after session/new's answer; a prompt /fix expands; /help is answered as
// the agent's message without a model call; /nope is InvalidParams.
func TestACPSlashCommands(t *testing.T) {
	srv := model(t, scripted.Script{Conversations: []scripted.Conversation{
		{Match: "Fix this: the parser", Turns: []scripted.Turn{{Text: "Fixed over ACP."}}},
	}})
	root, extra := customized(t)
	c := startACP(t, true, envFor(t, srv, extra...))
	session := c.newSession(root)
	c.waitFor("commands help [command], model [model], sessions, standup, fix <what is wrong>, check")
	if _, err := c.prompt(session, "/fix the parser"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("agent: Fixed over ACP.")
	if human := srv.Requests()[0].Messages[1].Content; !strings.HasPrefix(human, "Fix this: the parser.") {
		t.Fatalf("%q", human)
	}
	if _, err := c.prompt(session, "/help fix"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("/fix <what is wrong>\nFix what is wrong\nsource: project (.agents/commands/fix.md)")
	if _, err := c.prompt(session, "/nope"); err == nil || !strings.Contains(err.Error(), "unknown slash command /nope") {
		t.Fatalf("/nope: %v", err)
	}
	// A command file added during the session is announced after the next prompt.
	writeFiles(t, root, map[string]string{".agents/commands/new.md": "New one.\n"})
	if _, err := c.prompt(session, "/sessions"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("Sessions of project sample, newest first:\n- " + session + " /fix the parser (done, ")
	c.waitFor("commands help [command], model [model], sessions, standup, fix <what is wrong>, new, check")
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d model requests", n)
	}
}
