//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// checkpointList is `sessions checkpoints ID --json`.
type checkpointList struct {
	Checkpoints []struct {
		Checkpoint int `json:"checkpoint"`
		Files      []struct {
			Path       string `json:"path"`
			Restorable bool   `json:"restorable"`
			Reason     string `json:"reason"`
		} `json:"files"`
		Notes []string `json:"notes"`
	} `json:"checkpoints"`
}

func listCheckpoints(t *testing.T, c *cli, id string) checkpointList {
	t.Helper()
	out, errOut, code := c.run(t, "", "sessions", "checkpoints", id, "--json")
	var list checkpointList
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 {
		t.Fatalf("checkpoints: exit %d %v %s\n%s", code, err, out, errOut)
	}
	return list
}

// rewindResult is `rewind --json`.
type rewindResult struct {
	Conversation bool `json:"conversation"`
	Restored     []struct {
		Path string `json:"path"`
	} `json:"restored"`
	NotRestorable []struct {
		Path   string `json:"path"`
		Reason string `json:"reason"`
	} `json:"notRestorable"`
}

// TestRewindCommandFiles drives the rewind of files commands changed with
// the real binary, in a git repository: two prompts each edit two files
// and run a command that writes files. A rewind to checkpoint 2 (files,
// then conversation; then, after a third prompt, both) puts back a file
// the first prompt's command created (its content is in the history), a
// file that was clean in git (HEAD's content), deletes a file the command
// created, and lists an untracked file whose earlier content is unknown as
// "changed by a command, not restorable" without touching it.
func TestRewindCommandFiles(t *testing.T) {
	edit := func(path, from, to string) scripted.Turn {
		return scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": path, "old_text": from, "new_text": to})}}
	}
	command := func(line string) scripted.Turn {
		return scripted.Turn{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": line})}}
	}
	// (A redirection to a file always asks, and headless is denied: the
	// commands copy files of src/ instead.)
	lines := []string{"cp src/one out.txt", "cp src/two out.txt; cp src/changed tracked.txt; cp src/mine2 notes.txt; cp src/new made.txt",
		"cp src/three out.txt; cp src/again tracked.txt"}
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("create_file", map[string]any{"path": "a.txt", "content": "a1\n"})}},
		edit("greet.go", "Hello, ", "Hi, "),
		command(lines[0]),
		scripted.Turn{Text: "first"},
		edit("a.txt", "a1", "a2"),
		edit("greet.go", "Hi, ", "Hey, "),
		command(lines[1]),
		scripted.Turn{Text: "second"},
		command(lines[2]),
		scripted.Turn{Text: "third"},
	)
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(c.workspace, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(c.workspace, name))
		if err != nil {
			return "<absent>"
		}
		return string(b)
	}
	write("tracked.txt", "t0\n")
	os.Mkdir(filepath.Join(c.workspace, "src"), 0o755)
	for _, name := range []string{"one", "two", "changed", "mine2", "new", "three", "again"} {
		write("src/"+name, name+"\n")
	}
	commitAll(t, c.workspace)
	write("notes.txt", "n0\n") // untracked: its content is not known to the history
	prompt := func(args ...string) string { t.Helper(); return c.runCp(t, args...) }
	id := prompt("First prompt")
	prompt("--session", id, "Second prompt")
	if read("out.txt") != "two\n" || read("tracked.txt") != "changed\n" || read("made.txt") != "new\n" {
		t.Fatalf("the commands did not run: %q %q %q\n%v", read("out.txt"), read("tracked.txt"), read("made.txt"), toolMessages(c.srv))
	}
	list := listCheckpoints(t, c, id)
	if len(list.Checkpoints) != 2 {
		t.Fatalf("checkpoints: %+v", list)
	}
	files := map[string]string{} // path -> its reason, "ok" when restorable
	for _, f := range list.Checkpoints[1].Files {
		files[f.Path] = f.Reason
		if f.Restorable {
			files[f.Path] = "ok"
		}
	}
	want := map[string]string{"a.txt": "ok", "greet.go": "ok", "out.txt": "ok", "tracked.txt": "ok", "made.txt": "ok", "notes.txt": agent.ReasonCommand}
	for path, why := range want {
		if files[path] != why {
			t.Errorf("checkpoint 2's %s: %q, want %q (all: %v)", path, files[path], why, files)
		}
	}
	if out, _, _ := c.run(t, "", "sessions", "checkpoints", id); !strings.Contains(out, "notes.txt +1 -0  ("+agent.ReasonCommand+")") {
		t.Errorf("checkpoints as text:\n%s", out)
	}

	rewind := func(args ...string) rewindResult {
		t.Helper()
		out, errOut, code := c.run(t, "", append([]string{"rewind", id, "--to", "2", "--json"}, args...)...)
		var rw rewindResult
		if err := json.Unmarshal([]byte(out), &rw); err != nil || code != 0 {
			t.Fatalf("rewind %v: exit %d %v %s\n%s", args, code, err, out, errOut)
		}
		return rw
	}
	rw := rewind("--files")
	if len(rw.NotRestorable) != 1 || rw.NotRestorable[0].Path != "notes.txt" || rw.NotRestorable[0].Reason != agent.ReasonCommand || rw.Conversation {
		t.Fatalf("rewind --files: %+v", rw)
	}
	for name, text := range map[string]string{"a.txt": "a1\n", "out.txt": "one\n", "tracked.txt": "t0\n", "made.txt": "<absent>", "notes.txt": "mine2\n", "src/two": "two\n"} {
		if got := read(name); got != text {
			t.Errorf("after rewind --files, %s is %q, want %q", name, got, text)
		}
	}
	if !strings.Contains(read("greet.go"), "Hi, ") {
		t.Errorf("greet.go after rewind --files:\n%s", read("greet.go"))
	}
	if rw = rewind("--conversation"); !rw.Conversation || len(rw.Restored) != 0 {
		t.Fatalf("rewind --conversation: %+v", rw)
	}
	prompt("--session", id, "Third prompt")
	if h := history(c); strings.Contains(h, "Second prompt") || !strings.Contains(h, "First prompt") {
		t.Fatalf("the request after the rewind: %s", h)
	}
	if read("out.txt") != "three\n" || read("tracked.txt") != "again\n" {
		t.Fatalf("the third command did not run: %q %q", read("out.txt"), read("tracked.txt"))
	}
	if rw = rewind(); !rw.Conversation || len(rw.NotRestorable) != 0 {
		t.Fatalf("rewind (both): %+v", rw)
	}
	if read("out.txt") != "one\n" || read("tracked.txt") != "t0\n" || read("notes.txt") != "mine2\n" {
		t.Fatalf("after rewind (both): %q %q %q", read("out.txt"), read("tracked.txt"), read("notes.txt"))
	}
	if list := listCheckpoints(t, c, id); len(list.Checkpoints) != 1 {
		t.Fatalf("checkpoints after rewinding both: %+v", list)
	}
}

// TestRewindCommandHostile replays testdata/hostile/command-rewind.json:
// a command creates a file whose name holds a newline, and another
// replaces a file git had clean by a link to /etc/passwd. The first is
// listed not restorable by its (quoted) name and left alone; the rewind of
// the second is refused naming the file, and nothing outside changes.
func TestRewindCommandHostile(t *testing.T) {
	s, err := scripted.Load(filepath.Join("..", "..", "testdata", "hostile", "command-rewind.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t, s.Turns...)
	if err := os.WriteFile(filepath.Join(c.workspace, "linked.txt"), []byte("tracked\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commitAll(t, c.workspace)
	out, errOut, code := c.run(t, "", "run", "--json", "--allow", "touch *", "make a file")
	_, res := jsonLines(t, out)
	id, _ := res["session"].(string)
	if code != 0 || id == "" {
		t.Fatalf("first: exit %d %v\n%s", code, res, errOut)
	}
	evil := "evil\nname.txt"
	if _, err := os.Stat(filepath.Join(c.workspace, evil)); err != nil {
		t.Fatalf("the command did not make its file: %v\n%v", err, toolMessages(c.srv))
	}
	list := listCheckpoints(t, c, id)
	if len(list.Checkpoints) != 1 || len(list.Checkpoints[0].Files) != 1 || list.Checkpoints[0].Files[0].Restorable ||
		!strings.Contains(list.Checkpoints[0].Files[0].Reason, `"evil\nname.txt"`) {
		t.Fatalf("checkpoints: %+v", list)
	}
	if out, _, _ := c.run(t, "", "sessions", "checkpoints", id); !strings.Contains(out, `"evil\nname.txt" +0 -0`) {
		t.Errorf("the listing as text does not quote the name:\n%s", out)
	}
	out, errOut, code = c.run(t, "", "rewind", id, "--to", "1", "--files", "--json")
	var rw rewindResult
	if err := json.Unmarshal([]byte(out), &rw); err != nil || code != 0 || len(rw.NotRestorable) != 1 || rw.NotRestorable[0].Path != evil {
		t.Fatalf("rewind --to 1: exit %d %v %s\n%s", code, err, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(c.workspace, evil)); err != nil {
		t.Fatalf("the rewind touched %q: %v", evil, err)
	}

	if out, errOut, code = c.run(t, "", "run", "--json", "--session", id, "--allow", "rm *", "--allow", "ln *", "make a link"); code != 0 {
		t.Fatalf("second: exit %d\n%s%s", code, out, errOut)
	}
	if target, err := os.Readlink(filepath.Join(c.workspace, "linked.txt")); err != nil || target != "/etc/passwd" {
		t.Fatalf("the command did not make its link: %q %v", target, err)
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	out, errOut, code = c.run(t, "", "rewind", id, "--to", "2", "--files")
	if code != 1 || !strings.Contains(errOut, "linked.txt") || !strings.Contains(errOut, "refused") {
		t.Fatalf("rewinding a file replaced by a link out: exit %d\n%s%s", code, out, errOut)
	}
	if now, _ := os.ReadFile("/etc/passwd"); string(now) != string(passwd) {
		t.Fatal("/etc/passwd changed")
	}
	if target, err := os.Readlink(filepath.Join(c.workspace, "linked.txt")); err != nil || target != "/etc/passwd" {
		t.Fatalf("the refused rewind changed the link: %q %v", target, err)
	}
}

// commitAll makes dir a git repository with everything in it committed.
func commitAll(t *testing.T, dir string) {
	t.Helper()
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-q", "-m", "start")
}

// runCp runs a headless prompt that may run cp, and returns its session;
// it fails the test unless the run is done.
func (c *cli) runCp(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := c.run(t, "", append([]string{"run", "--json", "--allow", "cp *"}, args...)...)
	_, res := jsonLines(t, out)
	if code != 0 || res["status"] != "done" {
		t.Fatalf("%v: exit %d %v\n%s", args, code, res, errOut)
	}
	id, _ := res["session"].(string)
	return id
}
