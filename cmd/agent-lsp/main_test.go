//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

var binary string

func TestMain(m *testing.M) {
	sandbox.Main() // started as the sandbox's helper (requireNamespaces' probe runs this binary): confine and exec
	if url := os.Getenv(exchangeEnv); url != "" {
		os.Exit(exchangeChild(url)) // a benchmark's floor, in a process of its own
	}
	if params := os.Getenv(applyChildEnv); params != "" {
		os.Exit(applyChild(params)) // the headless client's edit under RLIMIT_FSIZE
	}
	dir, _ := os.MkdirTemp("", "agent-lsp-cli")
	binary = filepath.Join(dir, "agent-lsp")
	if b := os.Getenv("AGENT_LSP_TEST_BINARY"); b != "" {
		binary = b // a binary built otherwise (long runs by hand: without -race)
	} else if out, err := exec.Command("go", "build", "-race", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sandboxGoCache shares one sandbox Go build cache between the test
// projects (each a new directory, which would otherwise build the standard
// library again in a cache of its own).
func sandboxGoCache() string {
	dir, _ := os.UserCacheDir()
	return sandbox.GoCacheEnv + "=" + filepath.Join(dir, "agent-lsp-test-sandbox-go-build")
}

func call(name string, args any) scripted.ToolCall {
	b, _ := json.Marshal(args)
	return scripted.ToolCall{Name: name, Args: b}
}

type cli struct {
	workspace, store string
	srv              *scripted.Server
}

func newCLI(t *testing.T, turns ...scripted.Turn) *cli {
	srv, err := scripted.Start("127.0.0.1:0", scripted.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ws := filepath.Join(t.TempDir(), "sample")
	os.CopyFS(ws, os.DirFS("../../testdata/workspaces/sample"))
	return &cli{workspace: ws, store: filepath.Join(t.TempDir(), "s.db"), srv: srv}
}

func (c *cli) command(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+c.srv.URL, "OPENAI_API_KEY=sk-cli", "AGENT_LSP_MODEL=scripted", "AGENT_LSP_STORE="+c.store, sandboxGoCache())
	cmd.Dir = c.workspace
	return cmd
}

func (c *cli) run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	cmd := c.command(args...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// jsonLines parses --json output and returns the events and the result line.
func jsonLines(t *testing.T, out string) ([]map[string]any, map[string]any) {
	t.Helper()
	var evs []map[string]any
	var result map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if m["type"] == "result" {
			checkResultLine(t, line)
			if result != nil {
				t.Fatal("two result lines")
			}
			result = m
		} else if result != nil {
			t.Fatal("a line after the result line")
		} else {
			evs = append(evs, m)
		}
	}
	if result == nil {
		t.Fatalf("no result line in %q", out)
	}
	return evs, result
}

func TestRunDone(t *testing.T) {
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello", "new_text": "Hej"})}},
		scripted.Turn{Text: "Greeting is now Swedish."})
	out, errOut, code := c.run(t, "", "run", "--workspace", c.workspace, "--durability", "exit", "make it swedish")
	if code != 0 || out != "Greeting is now Swedish.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "→ edit_file") || !strings.Contains(errOut, "done after 3 steps, 1 edit, ") {
		t.Fatalf("transcript: %s", errOut)
	}
	b, _ := os.ReadFile(filepath.Join(c.workspace, "greet.go"))
	if !strings.Contains(string(b), `"Hej, " + name`) {
		t.Fatalf("edit not on disk: %s", b)
	}
}

func TestRunJSONFromStdin(t *testing.T) {
	c := newCLI(t, scripted.Turn{Text: "read your diff"})
	out, _, code := c.run(t, "diff --git a/x b/x\n+new line\n", "run", "--json", "-")
	evs, res := jsonLines(t, out)
	if code != 0 || res["status"] != "done" || res["reply"] != "read your diff" || res["usage"] == nil || res["session"] == "" {
		t.Fatalf("exit %d, result %v", code, res)
	}
	if evs[0]["type"] != "run.start" || evs[len(evs)-1]["type"] != "run.end" {
		t.Fatalf("events: %v", evs)
	}
	for i, e := range evs {
		if e["seq"].(float64) != float64(i+1) {
			t.Fatalf("event %d has seq %v: lines out of order", i, e["seq"])
		}
	}
	if got := c.srv.Requests()[0].Messages[1].Content; !strings.Contains(got, "+new line") {
		t.Fatalf("stdin prompt not sent: %q", got)
	}
}

func TestRunFailedAndLimit(t *testing.T) {
	c := newCLI(t, scripted.Turn{Error: &scripted.HTTPError{Status: 400, Message: "model not found"}})
	out, _, code := c.run(t, "", "run", "--json", "hi")
	_, res := jsonLines(t, out)
	if code != 1 || res["status"] != "failed" || !strings.Contains(res["error"].(string), "model not found") {
		t.Fatalf("exit %d, result %v", code, res)
	}
	c = newCLI(t, scripted.Turn{ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{})}}, scripted.Turn{Text: "never"})
	out, _, code = c.run(t, "", "run", "--json", "--max-steps", "1", "hi")
	if _, res = jsonLines(t, out); code != 3 || res["status"] != "limit" || res["limit"] != "steps" { // exit 3 since the CI contract (a step limit exited 1 before)
		t.Fatalf("limit: exit %d, result %v", code, res)
	}
}

func TestRunUsageErrors(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{
		{"run", "--bogus"},
		{"run", "--workspace", "/no/such/dir", "x"},
		{"run", "--resume", "a", "--session", "b"},
		{"run", "two", "prompts"},
		{"run", "--json", "--project", "nope", "x"},
		{"run", "--json", "--resume", "s-unknown"},
		{"run", "--durability", "eventually", "x"},
	} {
		out, errOut, code := c.run(t, "", args...)
		if code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
		if args[1] == "--json" {
			if _, res := jsonLines(t, out); res["status"] != "failed" {
				t.Errorf("%v: result %v", args, res)
			}
		}
	}
	if _, _, code := c.run(t, "", "run"); code != 2 {
		t.Errorf("empty stdin prompt: exit %d", code)
	}
	if out, _, code := c.run(t, "", "run", "--help"); code != 0 || !strings.Contains(out, "Exit status") {
		t.Errorf("--help: %d %q", code, out)
	}
}

func TestRunSIGINTCancelsAndResumes(t *testing.T) {
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 600"})}},
		scripted.Turn{Text: "finished later"})
	cmd := c.command("run", "--json", "--allow", "sleep *", "nap")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), `"tool.start"`) {
			cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	start := time.Now()
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v", err)
	}
	if d := time.Since(start); d > time.Minute { // the command sleeps ten minutes
		t.Fatalf("SIGINT did not stop the run: it ended after %s", d)
	}
	_, res := jsonLines(t, strings.Join(lines, "\n"))
	if res["status"] != "cancelled" {
		t.Fatalf("result %v", res)
	}
	out, _, code := c.run(t, "", "run", "--json", "--resume", res["session"].(string))
	if _, res2 := jsonLines(t, out); code != 0 || res2["reply"] != "finished later" {
		t.Fatalf("resume: exit %d %v", code, res2)
	}
	// And the sessions command shows it.
	list, _, code := c.run(t, "", "sessions", "--store", c.store)
	if code != 0 || !strings.Contains(list, res["session"].(string)) || !strings.Contains(list, "done") {
		t.Fatalf("sessions: %d %s", code, list)
	}
	show, _, _ := c.run(t, "", "sessions", "show", res["session"].(string), "--store", c.store)
	if !strings.Contains(show, "finished later") || !strings.Contains(show, "cancelled by the user") {
		t.Fatalf("show: %s", show)
	}
}

func TestVersionAndHelp(t *testing.T) {
	c := newCLI(t)
	if out, _, code := c.run(t, "", "version"); code != 0 || !strings.HasPrefix(out, "agent-lsp ") {
		t.Fatalf("version: %d %q", code, out)
	}
	if out, _, code := c.run(t, "", "--help"); code != 0 || !strings.Contains(out, "agent-lsp run") {
		t.Fatalf("help: %d %q", code, out)
	}
	if _, _, code := c.run(t, "", "frobnicate"); code != 2 {
		t.Fatalf("unknown command: %d", code)
	}
}
