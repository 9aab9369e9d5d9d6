//go:build unix

package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// TestRewindCommandFilesThroughTheEditor: a command overwrites a file git
// had clean and creates another; a rewind of the files puts them back as
// the agent's edits are, in the one labelled applyEdit: the first gets
// HEAD's content, the second is deleted.
func TestRewindCommandFilesThroughTheEditor(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "cp src/new greet.go; cp src/new made.txt"})}},
		{Text: "Copied."},
	}})
	sample := copyFixture(t, "sample")
	os.Mkdir(filepath.Join(sample, "src"), 0o755)
	os.WriteFile(filepath.Join(sample, "src", "new"), []byte("new\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false", "commit", "-q", "-m", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", sample}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	greet := filepath.Join(sample, "greet.go")
	original := readFile(t, greet)
	c := startServer(t, envFor(t, srv)...)
	diskEditor(t, c)
	c.initialize(map[string]string{"sample": sample}, map[string]any{"permissions": map[string]any{"allow": []string{"cp *"}}})
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "Copy"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("run: %+v %v", res, err)
	}
	if readFile(t, greet) != "new\n" || readFile(t, filepath.Join(sample, "made.txt")) != "new\n" {
		t.Fatalf("the command did not run: %q", readFile(t, greet))
	}
	edits := len(c.edits())
	var rw struct {
		Restored      []struct{ Path string }
		NotRestorable []struct{ Path string }
	}
	if err := rcommand(c, "agent.rewind", map[string]any{"session": res.Session, "checkpoint": 1, "restore": "files"}, &rw); err != nil {
		t.Fatal(err)
	}
	if len(rw.Restored) != 2 || len(rw.NotRestorable) != 0 || len(c.edits()) != edits+1 || !strings.Contains(string(c.edits()[edits]), `"label":"Rewind to before prompt 1"`) {
		t.Fatalf("rewind: %+v, %d applyEdits", rw, len(c.edits())-edits)
	}
	if readFile(t, greet) != original || readFile(t, filepath.Join(sample, "made.txt")) != "<absent>" {
		t.Fatalf("after the rewind: greet.go %q, made.txt %q", readFile(t, greet), readFile(t, filepath.Join(sample, "made.txt")))
	}
}
