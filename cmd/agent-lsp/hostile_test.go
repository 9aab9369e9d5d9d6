//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	openai "github.com/sashabaranov/go-openai"
)

// hostileCLI is a headless run of a hostile model's script (testdata/hostile)
// on a copy of a sample workspace.
func hostileCLI(t *testing.T, script, workspace string) *cli {
	s, err := scripted.Load(filepath.Join("..", "..", "testdata", "hostile", script))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scripted.Start("127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ws := filepath.Join(t.TempDir(), workspace)
	os.CopyFS(ws, os.DirFS("../../testdata/workspaces/"+workspace))
	return &cli{workspace: ws, store: filepath.Join(t.TempDir(), "s.db"), srv: srv}
}

// toolEnds returns the tool.end events by call ID.
func toolEnds(evs []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, e := range evs {
		if e["type"] == "tool.end" {
			out[e["callId"].(string)] = e
		}
	}
	return out
}

func TestHeadlessHostile(t *testing.T) {
	t.Run("smuggled commands", func(t *testing.T) {
		c := hostileCLI(t, "smuggled-commands.json", "sample")
		os.MkdirAll(filepath.Join(c.workspace, "victim"), 0o755)
		os.WriteFile(filepath.Join(c.workspace, "victim", "list"), []byte("victim\n"), 0o644)
		out, _, code := c.run(t, "", "run", "--json", "--allow", "go test *", "--deny", "rm *", "try your luck")
		evs, res := jsonLines(t, out)
		if code != 0 || res["status"] != "done" {
			t.Fatalf("exit %d %v", code, res)
		}
		ends := toolEnds(evs)
		if len(ends) != 15 {
			t.Fatalf("%d tool calls ended, want 15", len(ends))
		}
		for id, e := range ends {
			if e["ok"] != false || !strings.Contains(e["summary"].(string), "not allowed") {
				t.Errorf("%s ran: %v", id, e)
			}
		}
		entries, _ := os.ReadDir(c.workspace)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "pwned") {
				t.Errorf("a smuggled command ran: %s exists", e.Name())
			}
		}
		if _, err := os.Stat(filepath.Join(c.workspace, "victim", "list")); err != nil {
			t.Errorf("rm ran: %v", err)
		}
	})
	t.Run("hidden programs", func(t *testing.T) {
		c := hostileCLI(t, "hidden-programs.json", "sample")
		os.MkdirAll(filepath.Join(c.workspace, "victim"), 0o755)
		args := []string{"run", "--json", "--deny", "rm *"}
		for _, rule := range []string{"go test *", "tar *", "sed *", "python3 *", "git grep *", "rg *"} {
			args = append(args, "--allow", rule)
		}
		out, _, code := c.run(t, "", append(args, "try your luck")...)
		evs, res := jsonLines(t, out)
		if code != 0 || res["status"] != "done" {
			t.Fatalf("exit %d %v", code, res)
		}
		checkHiddenPrograms(t, toolEnds(evs), c.srv.Requests()[1].Messages, c.workspace)
	})
	t.Run("rewritten test script", func(t *testing.T) {
		c := hostileCLI(t, "rewrite-test-script.json", "other")
		out, _, code := c.run(t, "", "run", "--json", "make the tests pass")
		evs, res := jsonLines(t, out)
		if code != 0 || res["status"] != "done" {
			t.Fatalf("exit %d %v", code, res)
		}
		if e := toolEnds(evs)["call_test"]; e["ok"] != false || !strings.Contains(e["summary"].(string), "not allowed: npm test") {
			t.Fatalf("test after its script changed: %v", e)
		}
		if _, err := os.Stat(filepath.Join(c.workspace, "pwned")); err == nil {
			t.Fatal("the rewritten test script ran")
		}
	})
	for _, allow := range []bool{false, true} {
		t.Run("protected edits", func(t *testing.T) {
			c := hostileCLI(t, "protected-edits.json", "sample")
			os.MkdirAll(filepath.Join(c.workspace, ".git"), 0o755)
			os.WriteFile(filepath.Join(c.workspace, ".git", "config"), []byte("[core]\n"), 0o644)
			args := []string{"run", "--json"}
			if allow {
				args = append(args, "--allow-edit", ".vscode/settings.json")
			}
			out, _, code := c.run(t, "", append(args, "set things up")...)
			evs, res := jsonLines(t, out)
			if code != 0 || res["status"] != "done" {
				t.Fatalf("exit %d %v", code, res)
			}
			ends := toolEnds(evs)
			for _, id := range []string{"call_git", "call_agents", "call_env"} {
				if e := ends[id]; e["ok"] != false {
					t.Errorf("%s was applied headless: %v", id, e)
				}
			}
			_, err := os.Stat(filepath.Join(c.workspace, ".vscode", "settings.json"))
			if allow != (err == nil) {
				t.Errorf("--allow-edit %v: .vscode/settings.json exists: %v", allow, err == nil)
			}
			if b, _ := os.ReadFile(filepath.Join(c.workspace, ".git", "config")); strings.Contains(string(b), "fsmonitor") {
				t.Error(".git/config was changed")
			}
			reqs := c.srv.Requests()
			if last := reqs[1].Messages; !strings.Contains(last[len(last)-1].Content+last[len(last)-2].Content+last[len(last)-3].Content+last[len(last)-4].Content, "--allow-edit") {
				t.Error("the model was not told how a headless run allows a protected edit")
			}
		})
	}
}

// Without Landlock a headless run cannot confine the project's own test, and
// cannot ask: it is denied, and the reason names the flag that allows it.
func TestHeadlessWithoutLandlockDeniesTheTest(t *testing.T) {
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "test"})}},
		scripted.Turn{Text: "done"})
	out, _, code := c.run(t, "", "run", "--json", "--landlock=false", "run the tests")
	evs, res := jsonLines(t, out)
	if code != 0 || res["status"] != "done" {
		t.Fatalf("exit %d %v", code, res)
	}
	for _, e := range evs {
		if e["type"] == "tool.end" && e["ok"] != false {
			t.Fatalf("the test ran unconfined without asking: %v", e)
		}
	}
	reqs := c.srv.Requests()
	msgs := reqs[1].Messages
	if got := msgs[len(msgs)-1].Content; !strings.Contains(got, "not sandboxed") || !strings.Contains(got, `--allow "go test ./..."`) {
		t.Fatalf("the model was told %q", got)
	}
	// With that rule it runs.
	c2 := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "test"})}},
		scripted.Turn{Text: "done"})
	out, _, _ = c2.run(t, "", "run", "--json", "--landlock=false", "--allow", "go test ./...", "run the tests")
	for _, e := range func() []map[string]any { evs, _ := jsonLines(t, out); return evs }() {
		if e["type"] == "tool.end" && e["ok"] != true {
			t.Fatalf("with --allow the test did not run: %v", e)
		}
	}
}

// checkHiddenPrograms checks a headless run of hidden-programs.json under
// --allow "go test *" (and tar, sed, python3, git grep, rg) --deny "rm *":
// the programs in options, wrappers, trap and alias bodies meet the deny
// rule, those no rule allows are denied (headless), python3 -c needs a rule
// that names -c, and only the plain allowed command ran.
func checkHiddenPrograms(t *testing.T, ends map[string]map[string]any, msgs []openai.ChatCompletionMessage, ws string) {
	t.Helper()
	results := map[string]string{}
	for _, m := range msgs {
		if m.Role == openai.ChatMessageRoleTool {
			results[m.ToolCallID] = m.Content
		}
	}
	want := map[string]string{
		"c_exec": `matches the deny rule "rm *"`, "c_tar": `matches the deny rule "rm *"`, "c_envs": `matches the deny rule "rm *"`,
		"c_timeout": `matches the deny rule "rm *"`, "c_trap": `matches the deny rule "rm *"`,
		"c_alias": `matches the deny rule "rm *"`, "c_pager": `matches the deny rule "rm *"`,
		"c_toolexec": `no allow rule matches "touch pwned-toolexec"`, "c_sed": `no allow rule matches "touch pwned-sed"`,
		"c_rgpre":  `no allow rule matches "touch pwned-rg"`,
		"c_python": `only an allow rule that names -c allows it ("python3 -c *")`,
	}
	if len(ends) != len(want)+1 {
		t.Fatalf("%d tool calls ended, want %d", len(ends), len(want)+1)
	}
	for id, why := range want {
		if e := ends[id]; e["ok"] != false || !strings.Contains(results[id], why) {
			t.Errorf("%s: ok %v, told the model %q, want %q", id, e["ok"], results[id], why)
		}
	}
	if e := ends["c_allowed"]; e["ok"] != true || !strings.Contains(results["c_allowed"], "module") {
		t.Errorf("the allowed sed did not run: %v %q", e, results["c_allowed"])
	}
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "pwned") {
			t.Errorf("a hidden program ran: %s exists", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "victim")); err != nil {
		t.Errorf("rm ran: %v", err)
	}
}
