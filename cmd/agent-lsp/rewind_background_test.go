//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// TestRewindBackgroundFiles drives the real binary: the second prompt
// starts a background process that overwrites a file git has clean and
// creates another, and waits for it. Both are in checkpoint 2 (not 1),
// restorable, and a rewind of the files to checkpoint 2 puts the first
// back to HEAD's content and deletes the second.
func TestRewindBackgroundFiles(t *testing.T) {
	requireNamespaces(t)
	c := newCLI(t,
		scripted.Turn{Text: "first"},
		turnOf(toolCall("call_bg", "run_command", map[string]any{"command": "cp src/changed tracked.txt; cp src/new made.txt", "background": true})),
		turnOf(toolCall("call_wait", "process_wait", map[string]any{"id": "p1", "timeout_seconds": 120})),
		scripted.Turn{Text: "second"},
	)
	path := func(name string) string { return filepath.Join(c.workspace, name) }
	os.Mkdir(path("src"), 0o755)
	for name, text := range map[string]string{"tracked.txt": "t0\n", "src/changed": "changed\n", "src/new": "new\n"} {
		if err := os.WriteFile(path(name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commitAll(t, c.workspace)
	prompt := func(args ...string) string { t.Helper(); return c.runCp(t, args...) }
	id := prompt("First prompt")
	prompt("--session", id, "Second prompt")
	if b, _ := os.ReadFile(path("made.txt")); string(b) != "new\n" {
		t.Fatalf("the background process did not run: %q\n%v", b, toolMessages(c.srv))
	}
	if m := toolMessages(c.srv)["call_wait"]; !strings.Contains(m, "exit") {
		t.Fatalf("process_wait: %s", m)
	}
	list := listCheckpoints(t, c, id)
	if len(list.Checkpoints) != 2 || len(list.Checkpoints[0].Files) != 0 || len(list.Checkpoints[1].Files) != 2 {
		t.Fatalf("checkpoints: %+v", list)
	}
	for _, f := range list.Checkpoints[1].Files {
		if (f.Path != "tracked.txt" && f.Path != "made.txt") || !f.Restorable {
			t.Errorf("checkpoint 2's %+v", f)
		}
	}
	out, errOut, code := c.run(t, "", "rewind", id, "--to", "2", "--files", "--json")
	var rw rewindResult
	if err := json.Unmarshal([]byte(out), &rw); err != nil || code != 0 || len(rw.NotRestorable) != 0 || len(rw.Restored) != 2 {
		t.Fatalf("rewind: exit %d %v %s\n%s", code, err, out, errOut)
	}
	if b, _ := os.ReadFile(path("tracked.txt")); string(b) != "t0\n" {
		t.Errorf("tracked.txt after the rewind: %q", b)
	}
	if _, err := os.Stat(path("made.txt")); !os.IsNotExist(err) {
		t.Errorf("made.txt after the rewind: %v", err)
	}
}
