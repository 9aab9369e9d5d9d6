package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// TestRewindHistorySurvivesKill: a run killed with SIGKILL after its edits
// (at the default durability) leaves its checkpoint and its files'
// earlier contents in the store: a new process lists them and rewinds the
// files.
func TestRewindHistorySurvivesKill(t *testing.T) {
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "a.txt", "content": "a1\n"})}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "})}},
		scripted.Turn{Text: "never", Delay: scripted.Duration(time.Minute)},
	)
	greet := filepath.Join(c.workspace, "greet.go")
	before, _ := os.ReadFile(greet)
	cmd := exec.Command(binary, "run", "--json", "--no-daemon", "Edit two files")
	cmd.Env, cmd.Dir = c.command().Env, c.workspace
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		session, ended := "", 0
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var e map[string]any
			json.Unmarshal(sc.Bytes(), &e)
			if s, ok := e["session"].(string); ok && session == "" {
				session = s
			}
			if e["type"] == "tool.end" {
				if ended++; ended == 2 {
					time.Sleep(300 * time.Millisecond) // the model's third turn is being asked for
					syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
				}
			}
		}
		cmd.Wait()
		done <- session
	}()
	var session string
	select {
	case session = <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the run did not end")
	}
	if !strings.Contains(readText(greet), "Hi, ") {
		t.Fatalf("the edit was not made before the kill: %q", readText(greet))
	}
	out, errOut, code := c.run(t, "", "sessions", "checkpoints", session, "--json")
	if code != 0 || !strings.Contains(out, `"path":"a.txt"`) || !strings.Contains(out, `"path":"greet.go"`) {
		t.Fatalf("checkpoints after the kill: exit %d %s\n%s", code, out, errOut)
	}
	if out, errOut, code = c.run(t, "", "rewind", session, "--to", "1", "--files"); code != 0 {
		t.Fatalf("rewind after the kill: exit %d %s\n%s", code, out, errOut)
	}
	if readText(greet) != string(before) || readText(filepath.Join(c.workspace, "a.txt")) != "<absent>" {
		t.Fatalf("files after the rewind: %q, a.txt %q", readText(greet), readText(filepath.Join(c.workspace, "a.txt")))
	}
}

func readText(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<absent>"
	}
	return string(b)
}
