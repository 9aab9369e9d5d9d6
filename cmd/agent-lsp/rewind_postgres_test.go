//go:build unix

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store/postgres/pgtest"
)

// A rewind of a session another process runs on a shared PostgreSQL store
// (its lease, as another machine's would be) is refused, naming the
// holder (its machine and pid), and nothing changes: the session's files and
// checkpoints are as the run left them.
func TestRewindRefusedWhileLeasedOnPostgres(t *testing.T) {
	db := pgtest.FreshSchema(t)
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "a.txt", "content": "a1\n"})}},
		scripted.Turn{Text: "Sleeping.", ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 600"})}})
	c.store = db
	holder := c.command("run", "--json", "--allow", "sleep *", "make a.txt then sleep")
	var out bytes.Buffer
	holder.Stdout = &out
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	var session string
	for deadline := time.Now().Add(60 * time.Second); session == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no session started:\n%s", out.String())
		}
		list, _, _ := c.run(t, "", "sessions", "--store", db)
		if l := lineOf(list, "s-"); strings.Contains(l, "running") && fileText(c.workspace+"/a.txt") == "a1\n" {
			session = strings.Fields(l)[0]
		}
	}
	time.Sleep(500 * time.Millisecond) // the run is in its command now
	host, _ := os.Hostname()
	for _, scope := range [][]string{nil, {"--files"}, {"--conversation"}} {
		args := append([]string{"rewind", session, "--to", "1", "--no-daemon"}, scope...)
		res, errOut, code := c.run(t, "", args...)
		if code != 1 || !strings.Contains(errOut, "running elsewhere") || !strings.Contains(errOut, host+" pid") {
			t.Fatalf("rewind %v of the session another process runs: exit %d\n%s%s", scope, code, res, errOut)
		}
	}
	if fileText(c.workspace+"/a.txt") != "a1\n" {
		t.Fatalf("a.txt after the refused rewinds: %q", fileText(c.workspace+"/a.txt"))
	}
	if list, errOut, code := c.run(t, "", "sessions", "checkpoints", session, "--store", db); code != 0 || !strings.Contains(list, "a.txt") {
		t.Fatalf("checkpoints after the refused rewinds: exit %d\n%s%s", code, list, errOut)
	}
}
