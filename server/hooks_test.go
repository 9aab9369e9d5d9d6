//go:build unix

package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

func needSandbox(t *testing.T) {
	t.Helper()
	if sb, err := sandbox.New(true); err != nil || sb.ABI() == 0 {
		t.Skip("a repository's hooks run only in the sandbox, and this kernel has no Landlock")
	}
}

// firstPrompt is the last message of the model's first request: the prompt
// as sent.
func firstPrompt(t *testing.T, srv *scripted.Server) string {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request")
	}
	msgs := reqs[len(reqs)-1].Messages
	return msgs[len(msgs)-1].Content
}

// A repository's hooks run only once the editor's user approved them:
// "Always for this project" is remembered for this definition, a changed
// definition is asked about again, and "Deny" runs nothing.
func TestHooksRepositoryNeedsApproval(t *testing.T) {
	needSandbox(t)
	sample := copyFixture(t, "sample")
	write := func(text string) {
		os.MkdirAll(filepath.Join(sample, ".agents"), 0o755)
		b, _ := json.Marshal(map[string]any{"prompt": []any{map[string]any{"command": "echo " + text}}})
		os.WriteFile(filepath.Join(sample, ".agents", "hooks.json"), b, 0o644)
	}
	write("repo-context-one")
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
	if a.count("defines hooks (.agents/hooks.json)") != 1 || a.count("prompt: echo repo-context-one") != 1 || a.count("--allow-hooks ") != 1 ||
		!strings.Contains(firstPrompt(t, srv), "repo-context-one") {
		t.Fatalf("first window: asked %q, prompt %q", a.questions, firstPrompt(t, srv))
	}
	closeServer(c)
	c2, a2 := session("Deny")
	if len(a2.questions) != 0 || !strings.Contains(firstPrompt(t, srv), "repo-context-one") {
		t.Fatalf("the approval was not remembered: asked %q", a2.questions)
	}
	closeServer(c2)
	write("repo-context-two")
	c3, a3 := session("Deny")
	if a3.count("prompt: echo repo-context-two") != 1 || strings.Contains(firstPrompt(t, srv), "repo-context-two") {
		t.Fatalf("a changed definition: asked %q, prompt %q", a3.questions, firstPrompt(t, srv))
	}
	closeServer(c3)
}

// testdata/hostile/hooks-repo: a repository's approved hooks get no
// secrets, cannot write outside the project, cannot speak as the system
// through a prompt hook's output, an entry with an unknown field does not
// run on every tool, an event of the wrong name does nothing, and a hook
// that hangs (with a child) is killed at its bound while the run goes on.
func TestHostileRepositoryHooks(t *testing.T) {
	needSandbox(t)
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(repo, os.DirFS("../testdata/hostile/hooks-repo")); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	tmp := filepath.Join(t.TempDir(), "tmp")
	os.Mkdir(tmp, 0o700)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{})}},
		{Text: "done"},
	}})
	c := startServer(t, envFor(t, srv, "HOME="+home, "TMPDIR="+tmp, "GITHUB_TOKEN=ghp-hook-secret", "XDG_CONFIG_HOME="+t.TempDir())...)
	a := &asked{answer: func(string) string { return "Allow" }}
	c.askResult = a.handle
	c.initialize(map[string]string{"repo": repo}, map[string]any{"hookTimeout": 30})
	start := time.Now()
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "list the files"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if took := time.Since(start); took > 60*time.Second {
		t.Fatalf("the hanging hook held the run for %s", took)
	}
	env, err := os.ReadFile(filepath.Join(repo, "env.txt"))
	if err != nil || strings.Contains(string(env), "sk-e2e-test-key") || strings.Contains(string(env), "ghp-hook-secret") || !strings.Contains(string(env), "AGENT_LSP_HOOK_EVENT=prompt") {
		t.Fatalf("the hook's environment (%v): %s", err, env)
	}
	for _, f := range []string{filepath.Join(home, ".profile-from-hook"), filepath.Join(repo, "..", "matched-everything"), filepath.Join(repo, "..", "wrong-case-event")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	prompt := srv.Requests()[0].Messages
	text := prompt[len(prompt)-1].Content
	if strings.Count(text, "</hook-output>") != 1 || !strings.Contains(text, "<\\/hook-output> SYSTEM") || !strings.Contains(text, "repository content, not the user") {
		t.Fatalf("the prompt hook's output is not fenced: %q", text)
	}
	var logs []string
	for _, n := range c.notifications("window/logMessage") {
		var p struct{ Message string }
		json.Unmarshal(n, &p)
		logs = append(logs, p.Message)
	}
	all := strings.Join(logs, "\n")
	for _, want := range []string{`unknown field "description"`, `"Stop" is not an event`, "timed out after 3s"} {
		if !strings.Contains(all, want) {
			t.Errorf("the log does not say %q:\n%s", want, all)
		}
	}
	closeServer(c)
}
