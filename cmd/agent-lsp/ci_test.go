//go:build unix

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// TestExitCodes: the exit code of each outcome, and the result line that
// agrees with it (cancelled: TestRunSIGINTCancelsAndResumes).
func TestExitCodes(t *testing.T) {
	denied := []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "make lint"})}}, {Text: "done without lint"}}
	for _, tc := range []struct {
		name   string
		turns  []scripted.Turn
		args   []string
		code   int
		status string
		check  func(t *testing.T, res map[string]any)
	}{
		{name: "done", turns: []scripted.Turn{{Text: "ok"}}, code: 0, status: "done"},
		{name: "failed", turns: []scripted.Turn{{Error: &scripted.HTTPError{Status: 400, Message: "no"}}}, code: 1, status: "failed"},
		{name: "step limit", turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{})}}, {Text: "never"}},
			args: []string{"--max-steps", "1"}, code: 3, status: "limit",
			check: func(t *testing.T, res map[string]any) {
				if res["limit"] != "steps" {
					t.Errorf("limit %v", res["limit"])
				}
			}},
		{name: "denied", turns: denied, code: 0, status: "done",
			check: func(t *testing.T, res map[string]any) {
				d, _ := res["denied"].([]any)
				if len(d) != 1 || d[0].(map[string]any)["what"] != "make lint" || d[0].(map[string]any)["tool"] != "run_command" ||
					d[0].(map[string]any)["ruleHint"] != `--allow "make lint"` {
					t.Errorf("denied %v", res["denied"])
				}
			}},
		{name: "denied with --fail-on-denied", turns: denied, args: []string{"--fail-on-denied"}, code: 4, status: "done"},
		{name: "a bad flag", args: []string{"--bogus"}, code: 2, status: "failed"},
		{name: "an unknown project", args: []string{"--project", "nope"}, code: 2, status: "failed"},
		{name: "an unknown session", args: []string{"--session", "s-nope"}, code: 2, status: "failed"},
		{name: "an unknown resume", args: []string{"--resume", "s-nope"}, code: 2, status: "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t, tc.turns...)
			args := append(append([]string{"run", "--json"}, tc.args...), "--prices", "scripted=1/2")
			if !strings.Contains(strings.Join(tc.args, " "), "--resume") {
				args = append(args, "do it")
			}
			out, errOut, code := c.run(t, "", args...)
			_, res := jsonLines(t, out)
			if code != tc.code || res["status"] != tc.status {
				t.Fatalf("exit %d (want %d), result %v\n%s", code, tc.code, res, errOut)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// TestQueuedExitsZero: a prompt given to a running session is queued: exit
// 0, status queued, the session's ID.
func TestQueuedExitsZero(t *testing.T) {
	c := newCLI(t,
		scripted.Turn{Delay: scripted.Duration(3 * time.Second), ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{})}},
		scripted.Turn{Text: "read both"})
	cmd := c.command("run", "--json", "look around")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	sc := bufio.NewScanner(stdout)
	var session string
	for sc.Scan() {
		var e map[string]any
		json.Unmarshal(sc.Bytes(), &e)
		if e["type"] == "run.start" {
			session = e["session"].(string)
			break
		}
	}
	out, errOut, code := c.run(t, "", "run", "--json", "--session", session, "and the tests too")
	_, res := jsonLines(t, out)
	if code != 0 || res["status"] != "queued" || res["session"] != session || res["position"] != float64(1) {
		t.Fatalf("exit %d, result %v\n%s", code, res, errOut)
	}
	for sc.Scan() {
	}
}

// TestContinue: --continue takes the newest session of the workspace: with
// a prompt it continues it, without one it resumes it when it stopped
// before its end, and says a done one is done; a folder without a session
// is a usage error.
func TestContinue(t *testing.T) {
	c := newCLI(t, scripted.Turn{Text: "first"}, scripted.Turn{Text: "second"},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{})}}, scripted.Turn{Text: "third, after the limit"})
	out, errOut, code := c.run(t, "", "run", "--json", "start")
	_, first := jsonLines(t, out)
	if code != 0 || first["reply"] != "first" {
		t.Fatalf("start: exit %d, %v\n%s", code, first, errOut)
	}
	out, errOut, code = c.run(t, "", "run", "--json", "--continue", "go on")
	_, second := jsonLines(t, out)
	if code != 0 || second["session"] != first["session"] || second["reply"] != "second" {
		t.Fatalf("continue: exit %d, %v\n%s", code, second, errOut)
	}
	if got := c.srv.Requests()[1].Messages; len(got) < 4 || !strings.Contains(got[len(got)-1].Content, "go on") {
		t.Fatalf("the second prompt did not continue the conversation: %d messages", len(got))
	}
	_, errOut, code = c.run(t, "", "run", "--continue")
	if code != 2 || !strings.Contains(errOut, "is done: give a prompt to continue it") {
		t.Fatalf("a done session without a prompt: exit %d\n%s", code, errOut)
	}
	out, _, code = c.run(t, "", "run", "--json", "--continue", "--max-steps", "1", "list")
	if _, res := jsonLines(t, out); code != 3 || res["session"] != first["session"] {
		t.Fatalf("limit: exit %d %v", code, res)
	}
	out, errOut, code = c.run(t, "", "run", "--json", "--continue")
	if _, res := jsonLines(t, out); code != 0 || res["reply"] != "third, after the limit" || res["session"] != first["session"] {
		t.Fatalf("resume: exit %d %v\n%s", code, res, errOut)
	}

	empty := filepath.Join(t.TempDir(), "empty")
	os.MkdirAll(empty, 0o755)
	_, errOut, code = c.run(t, "", "run", "--workspace", empty, "--continue", "hello")
	if code != 2 || !strings.Contains(errOut, "no session of this workspace yet") {
		t.Fatalf("no session: exit %d\n%s", code, errOut)
	}
}

// TestOutputFile: -o writes the final reply, atomically, when the run is done.
func TestOutputFile(t *testing.T) {
	c := newCLI(t, scripted.Turn{Text: "# Review\n\nLooks good."})
	path := filepath.Join(t.TempDir(), "reply.md")
	os.WriteFile(path, []byte("old"), 0o644)
	if _, errOut, code := c.run(t, "", "run", "-o", path, "review"); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(path); string(b) != "# Review\n\nLooks good.\n" {
		t.Fatalf("-o wrote %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".reply.md.*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestOutputSchema: the answer must be JSON valid against --output-schema:
// valid at once; valid after one correction (the errors sent back); invalid
// twice: exit 1 with them. The schema goes as response_format, and again
// without it when the endpoint refuses the field.
func TestOutputSchema(t *testing.T) {
	schema := filepath.Join(t.TempDir(), "verdict.json")
	os.WriteFile(schema, []byte(`{"type":"object","properties":{"safe":{"type":"boolean"},"why":{"type":"string"}},"required":["safe","why"],"additionalProperties":false}`), 0o644)
	for _, tc := range []struct {
		name    string
		script  scripted.Script
		code    int
		asked   int // model requests
		refused bool
	}{
		{name: "valid at once", script: scripted.Script{Turns: []scripted.Turn{{Text: `{"safe":true,"why":"tests pass"}`}}}, code: 0, asked: 1},
		{name: "valid after one correction", script: scripted.Script{Turns: []scripted.Turn{{Text: `{"safe":"yes"}`}, {Text: "```json\n{\"safe\":true,\"why\":\"fixed\"}\n```"}}}, code: 0, asked: 2},
		{name: "invalid twice", script: scripted.Script{Turns: []scripted.Turn{{Text: "It is safe."}, {Text: `{"safe":1}`}}}, code: 1, asked: 2},
		{name: "an endpoint without response_format", script: scripted.Script{RefuseResponseFormat: true, Turns: []scripted.Turn{{Text: `{"safe":false,"why":"no"}`}}}, code: 0, asked: 2, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			c.srv.SetScript(tc.script)
			outFile := filepath.Join(t.TempDir(), "out.json")
			out, errOut, code := c.run(t, "", "run", "--json", "--output-schema", schema, "-o", outFile, "is it safe?")
			_, res := jsonLines(t, out)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %v\n%s", code, tc.code, res, errOut)
			}
			reqs := c.srv.Requests()
			if len(reqs) != tc.asked {
				t.Fatalf("%d model requests, want %d", len(reqs), tc.asked)
			}
			if !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Content, `"required":["safe","why"]`) {
				t.Errorf("the prompt does not describe the schema: %q", reqs[0].Messages[len(reqs[0].Messages)-1].Content)
			}
			if reqs[0].ResponseFormat == nil || reqs[0].ResponseFormat.Type != "json_schema" {
				t.Errorf("no response_format: %+v", reqs[0].ResponseFormat)
			}
			if tc.refused && reqs[1].ResponseFormat != nil {
				t.Errorf("asked again with the refused response_format")
			}
			switch {
			case code == 0:
				o, _ := res["output"].(map[string]any)
				if _, ok := o["safe"].(bool); !ok {
					t.Fatalf("output %v", res["output"])
				}
				b, _ := os.ReadFile(outFile)
				var written map[string]any
				if json.Unmarshal(b, &written) != nil || written["safe"] != o["safe"] {
					t.Fatalf("-o has %q", b)
				}
			default:
				if res["status"] != "failed" || !strings.Contains(res["error"].(string), "not valid against the schema") {
					t.Fatalf("result %v", res)
				}
				if _, err := os.Stat(outFile); err == nil {
					t.Fatal("-o written for an invalid answer")
				}
			}
			if tc.asked == 2 && !tc.refused && !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Content, "not what was asked") {
				t.Errorf("the correction does not say what is wrong: %q", reqs[1].Messages[len(reqs[1].Messages)-1].Content)
			}
		})
	}
	c := newCLI(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"type": 7}`), 0o644)
	if _, errOut, code := c.run(t, "", "run", "--output-schema", bad, "x"); code != 2 || !strings.Contains(errOut, "--output-schema") {
		t.Fatalf("a bad schema: exit %d\n%s", code, errOut)
	}
}

// TestEphemeral: --ephemeral runs in-process with a memory store: the store
// file is byte-identical after it, and it continues no session.
func TestEphemeral(t *testing.T) {
	c := newCLI(t, scripted.Turn{Text: "stored"}, scripted.Turn{Text: "not stored"})
	if _, errOut, code := c.run(t, "", "run", "--no-daemon", "first"); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	sum := func() [32]byte {
		b, err := os.ReadFile(c.store)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	before := sum()
	out, errOut, code := c.run(t, "", "run", "--json", "--ephemeral", "second")
	if _, res := jsonLines(t, out); code != 0 || res["reply"] != "not stored" {
		t.Fatalf("exit %d %v\n%s", code, res, errOut)
	}
	if sum() != before {
		t.Fatal("--ephemeral changed the store file")
	}
	list, _, _ := c.run(t, "", "sessions", "--store", c.store)
	if strings.Count(strings.TrimSpace(list), "\n") != 1 {
		t.Fatalf("sessions after an ephemeral run:\n%s", list)
	}
	if _, errOut, code := c.run(t, "", "run", "--ephemeral", "--continue", "x"); code != 2 || !strings.Contains(errOut, "--ephemeral stores nothing") {
		t.Fatalf("--ephemeral --continue: exit %d\n%s", code, errOut)
	}
}

// TestDiffAndFilesChanged: the result lists the files the run changed with
// their lines; --diff adds the unified diff (in the result with --json, on
// stderr without).
func TestDiffAndFilesChanged(t *testing.T) {
	turns := []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello", "new_text": "Hej"})}},
		{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "notes/todo.txt", "content": "one\ntwo\n"})}},
		{Text: "changed two files"},
	}
	c := newCLI(t, turns...)
	out, errOut, code := c.run(t, "", "run", "--json", "--diff", "change things")
	_, res := jsonLines(t, out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	files, _ := json.Marshal(res["filesChanged"])
	if string(files) != `[{"added":1,"path":"greet.go","removed":1},{"added":2,"path":"notes/todo.txt","removed":0}]` {
		t.Fatalf("filesChanged %s", files)
	}
	diff, _ := res["diff"].(string)
	for _, want := range []string{"--- a/greet.go\n+++ b/greet.go\n", `-	return "Hello, " + name`, `+	return "Hej, " + name`, "--- /dev/null\n+++ b/notes/todo.txt\n", "+one\n+two\n"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}

	c = newCLI(t, turns...)
	out, errOut, code = c.run(t, "", "run", "--diff", "change things")
	if code != 0 || out != "changed two files\n" || !strings.Contains(errOut, "+++ b/greet.go") {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, errOut)
	}
	c = newCLI(t, turns...)
	out, _, _ = c.run(t, "", "run", "--json", "change things")
	if _, res := jsonLines(t, out); res["diff"] != nil || len(res["filesChanged"].([]any)) != 2 {
		t.Fatalf("without --diff: %v", res)
	}
}
