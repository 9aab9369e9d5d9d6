//go:build unix

package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// hostile loads a hostile model's script from testdata/hostile.
func hostile(t *testing.T, name string) scripted.Script {
	t.Helper()
	s, err := scripted.Load(filepath.Join("..", "testdata", "hostile", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The model rewrites the test script and runs "test": the project's own test
// command asks once its definition changed in the session, and the rewritten
// script does not run when the user says no.
func TestHostileRewriteTestScript(t *testing.T) {
	srv := model(t, hostile(t, "rewrite-test-script.json"))
	other := copyFixture(t, "other")
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"other": other}, nil)
	var asked []string
	var mu sync.Mutex
	c.askResult = func(p json.RawMessage) any {
		var req struct{ Message string }
		json.Unmarshal(p, &req)
		mu.Lock()
		asked = append(asked, req.Message)
		mu.Unlock()
		return map[string]string{"title": "Deny"}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "make the tests pass"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "npm test") || !strings.Contains(asked[0], "changed a file that defines the other commands") {
		t.Fatalf("asked %q", asked)
	}
	if _, err := os.Stat(filepath.Join(other, "pwned")); err == nil {
		t.Fatal("the rewritten test script ran")
	}
	reqs := srv.Requests()
	if last := reqs[2].Messages[len(reqs[2].Messages)-1].Content; !strings.Contains(last, `running "npm test" was not allowed: the user denied it`) {
		t.Fatalf("the model was told %q", last)
	}
}

// Programs hidden in options (go test -exec, tar --checkpoint-action, git
// grep -O, sed's e, rg --pre), wrappers (env -S, timeout sh -c), trap and
// alias bodies meet the deny rule without a question; the ones no rule
// allows and python3 -c (python3 * does not name -c) are asked, showing the
// hidden command, and do not run when the user says no; the plain allowed
// command runs.
func TestHostileHiddenPrograms(t *testing.T) {
	srv := model(t, hostile(t, "hidden-programs.json"))
	sample := copyFixture(t, "sample")
	os.MkdirAll(filepath.Join(sample, "victim"), 0o755)
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": sample}, map[string]any{"permissions": map[string]any{
		"allow": []string{"go test *", "tar *", "sed *", "python3 *", "git grep *", "rg *"}, "deny": []string{"rm *"}}})
	var asked []string
	var mu sync.Mutex
	c.askResult = func(p json.RawMessage) any {
		var req struct{ Message string }
		json.Unmarshal(p, &req)
		mu.Lock()
		asked = append(asked, req.Message)
		mu.Unlock()
		return map[string]string{"title": "Deny"}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "try your luck"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{`no allow rule matches "touch pwned-toolexec"`, `no allow rule matches "touch pwned-sed"`,
		`no allow rule matches "touch pwned-rg"`, `only an allow rule that names -c allows it ("python3 -c *")`} {
		if n := countContaining(asked, want); n != 1 {
			t.Errorf("asked %d times about %q", n, want)
		}
	}
	if len(asked) != 4 {
		t.Errorf("asked %d questions, want 4 (a deny rule never asks): %q", len(asked), asked)
	}
	tools := map[string]string{}
	for _, m := range srv.Requests()[1].Messages {
		tools[m.ToolCallID] = m.Content
	}
	for _, id := range []string{"c_exec", "c_tar", "c_envs", "c_timeout", "c_trap", "c_alias", "c_pager"} {
		if !strings.Contains(tools[id], `matches the deny rule "rm *"`) {
			t.Errorf("%s: the model was told %q", id, tools[id])
		}
	}
	if !strings.Contains(tools["c_allowed"], "module") {
		t.Errorf("the allowed sed did not run: %q", tools["c_allowed"])
	}
	entries, _ := os.ReadDir(sample)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "pwned") {
			t.Errorf("a hidden program ran: %s exists", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(sample, "victim")); err != nil {
		t.Errorf("rm ran: %v", err)
	}
}

func countContaining(list []string, s string) int {
	n := 0
	for _, l := range list {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// Edits of files that run programs, hold secrets or steer the agent need the
// user's confirmation even in apply mode; allowEdit lets named ones through.
func TestHostileProtectedEdits(t *testing.T) {
	for _, allowVSCode := range []bool{false, true} {
		srv := model(t, hostile(t, "protected-edits.json"))
		sample := copyFixture(t, "sample")
		os.MkdirAll(filepath.Join(sample, ".git"), 0o755)
		os.WriteFile(filepath.Join(sample, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644)
		c := startServer(t, envFor(t, srv)...)
		opts := map[string]any{}
		if allowVSCode {
			opts["permissions"] = map[string]any{"allowEdit": []string{".vscode/settings.json"}}
		}
		c.initialize(map[string]string{"sample": sample}, opts)
		c.applyResult = func(p json.RawMessage) any {
			if strings.Contains(string(p), `"needsConfirmation":true`) {
				return map[string]any{"applied": false, "failureReason": "rejected in review"}
			}
			return map[string]any{"applied": true}
		}
		var res runResult
		if err := c.command("agent.run", map[string]any{"prompt": "set things up"}, &res); err != nil || res.Status != "done" {
			t.Fatalf("%+v %v", res, err)
		}
		confirm := map[string]string{} // file -> the annotation's description
		for _, raw := range c.edits() {
			var e struct {
				Edit struct {
					DocumentChanges []struct {
						TextDocument struct{ URI string }
						URI          string
					}
					ChangeAnnotations map[string]struct {
						NeedsConfirmation bool
						Description       string
					}
				}
			}
			json.Unmarshal(raw, &e)
			u := e.Edit.DocumentChanges[len(e.Edit.DocumentChanges)-1].TextDocument.URI
			name := strings.TrimPrefix(u, "file://"+sample+"/")
			for _, a := range e.Edit.ChangeAnnotations {
				if a.NeedsConfirmation {
					confirm[name] = a.Description
				}
			}
		}
		want := map[string]string{".git/config": "hooks run programs", ".vscode/settings.json": "set the agent's permissions",
			"AGENTS.md": "standing instructions", ".env": "secrets"}
		if allowVSCode {
			delete(want, ".vscode/settings.json")
		}
		if len(c.edits()) != 4 || len(confirm) != len(want) {
			t.Fatalf("allowEdit %v: %d edits, confirmations %v", allowVSCode, len(c.edits()), confirm)
		}
		for f, why := range want {
			if !strings.Contains(confirm[f], why) {
				t.Errorf("allowEdit %v: %s: confirmation %q, want it to say %q", allowVSCode, f, confirm[f], why)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(sample, ".git", "config")); strings.Contains(string(b), "fsmonitor") {
			t.Fatal(".git/config changed behind the editor's back")
		}
	}
}

// In review mode the edits of one turn reach the user one at a time, all of
// them, instead of the later ones being refused while one is on screen.
func TestReviewQueueOneAtATime(t *testing.T) {
	var calls []scripted.ToolCall
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt"} {
		calls = append(calls, call("create_file", map[string]any{"path": f, "content": f}))
	}
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{ToolCalls: calls}, {Text: "created"}}})
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, map[string]any{"edits": "review"})
	var mu sync.Mutex
	outstanding, most := 0, 0
	c.applyResult = func(json.RawMessage) any {
		mu.Lock()
		outstanding++
		most = max(most, outstanding)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond) // the user reads the diff; parallel edits would arrive now
		mu.Lock()
		outstanding--
		mu.Unlock()
		return map[string]any{"applied": true}
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "create files"}, &res); err != nil || res.Status != "done" || res.Edits != 5 {
		t.Fatalf("%+v %v", res, err)
	}
	if most != 1 {
		t.Fatalf("%d confirmations were on screen at once, want 1", most)
	}
}

// Commands never get the API key, tokens, passwords or the sockets that lead
// out of the project: neither the model (through the tool result) nor the
// store ever sees them.
func TestCommandEnvironmentIsScrubbed(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY": "sk-e2e-test-key", "MY_KEY": "sk-the-named-key", "GITHUB_TOKEN": "ghp_secret123", "MY_PASSWORD": "hunter2",
		"AWS_SECRET_ACCESS_KEY": "aws-secret", "SERVICE_API_KEY": "service-secret", "PGPASSWORD": "pg-secret",
		"DATABASE_URL": "postgres://u:db-secret@h/db", "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock", "NVIM": "/tmp/nvim-server.sock",
		"VSCODE_IPC_HOOK_CLI": "/tmp/vscode-ipc.sock", "DOCKER_HOST": "unix:///tmp/docker.sock", "GPG_TTY": "/dev/pts/77",
	}
	srv := model(t, hostile(t, "env-leak.json"))
	env := envFor(t, srv, "AGENT_LSP_BENIGN=visible-value")
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	c := startServer(t, env...)
	store := env[3][len("AGENT_LSP_STORE="):]
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")},
		map[string]any{"permissions": map[string]any{"allow": []string{"env"}}, "model": map[string]any{"apiKeyEnv": "MY_KEY"}})
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "show me the environment"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	reqs := srv.Requests()
	out := reqs[1].Messages[len(reqs[1].Messages)-1].Content
	if !strings.Contains(out, "AGENT_LSP_BENIGN=visible-value") {
		t.Fatalf("env did not run as expected: %q", out)
	}
	if strings.Contains(out, "AGENT_LSP_STORE=") { // it may be a database URL with its password
		t.Errorf("the store's variable reached the command: %s", out)
	}
	c.call("shutdown", nil, nil)
	db, _ := os.ReadFile(store)
	for name, v := range secrets {
		if strings.Contains(out, v) || strings.Contains(out, name+"=") {
			t.Errorf("%s reached the command: %s", name, out)
		}
		if strings.Contains(string(db), v) {
			t.Errorf("%s's value is in the store", name)
		}
	}
}

// A damaged store file does not stop the server: it is moved aside, the user
// is told with window/showMessage, and the session list works.
func TestDamagedStoreIsMovedAside(t *testing.T) {
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "hello"}}})
	env := envFor(t, srv)
	store := env[3][len("AGENT_LSP_STORE="):]
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(i * 7)
	}
	copy(garbage, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xED, 0xDA, 0x0C, 0xE9}) // a bbolt magic, then nonsense
	os.WriteFile(store, garbage, 0o600)
	c := startServer(t, env...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	var list []json.RawMessage
	if err := c.command("agent.sessions", map[string]any{}, &list); err != nil || len(list) != 0 {
		t.Fatalf("sessions: %v %v", list, err)
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "hi"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	shown := ""
	for _, n := range c.notifications("window/showMessage") {
		shown += string(n)
	}
	if !strings.Contains(shown, "is damaged") || !strings.Contains(shown, ".corrupt-") {
		t.Fatalf("the user was not told: %s", shown)
	}
	if aside, _ := filepath.Glob(store + ".corrupt-*"); len(aside) != 1 {
		t.Fatalf("the damaged file was not kept: %v", aside)
	}
}

// vmHWM is a process's peak resident memory, from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// The server's memory stays bounded while the agent reads a 1 GB file and
// runs a command that prints 400 MB (it once took 1.45 GB for the output).
func TestMemoryBoundedOnHugeFilesAndOutput(t *testing.T) {
	srv := model(t, hostile(t, "huge-file-and-output.json"))
	sample := copyFixture(t, "sample")
	f, err := os.Create(filepath.Join(sample, "huge.log"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("first line\nsecond line\n")
	f.Truncate(1 << 30)
	f.Close()
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": sample}, map[string]any{"permissions": map[string]any{"allow": []string{"head *", "tr *"}}})
	before := vmHWM(t, c.cmd.Process.Pid)
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "look at the log"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	peak := vmHWM(t, c.cmd.Process.Pid)
	t.Logf("server peak RSS: %d MiB before the run, %d MiB after (race-enabled binary)", before>>20, peak>>20)
	if peak > 400<<20 {
		t.Fatalf("the server's peak RSS grew to %d MiB", peak>>20)
	}
	results := map[string]string{}
	for _, req := range srv.Requests() {
		for _, m := range req.Messages {
			if m.ToolCallID != "" {
				results[m.ToolCallID] = m.Content
			}
		}
	}
	for id, want := range map[string]string{"whole": "over the 8388608-byte limit", "lines": "2| second line",
		"search": "not searched, over 2097152 bytes: huge.log", "output": "exit status 0 (400000000 bytes of output; the middle is left out)"} {
		if !strings.Contains(results[id], want) {
			t.Errorf("%s: %q, want %q", id, clipStr(results[id], 300), want)
		}
	}
}

func clipStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// A model that runs away: 40 MiB of arguments, 44 calls in one turn, a
// timeout of thirty years, a 20 KiB command line and a command that leaves a
// child running. Each is bounded, answered, and the run ends.
func TestHostileRunawayModel(t *testing.T) {
	srv := model(t, hostile(t, "runaway-model.json"))
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	c.askResult = func(json.RawMessage) any { return map[string]string{"title": "Allow once"} } // "$!" asks
	c.initialize(map[string]string{"sample": sample}, map[string]any{"permissions": map[string]any{"allow": []string{"echo *", "sleep *"}}})
	var res runResult
	done := make(chan error, 1)
	go func() { done <- c.command("agent.run", map[string]any{"prompt": "run away"}, &res) }()
	select {
	case err := <-done:
		if err != nil || res.Status != "done" {
			t.Fatalf("%+v %v", res, err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end")
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if b, _ := json.Marshal(reqs[1]); len(b) > 1<<20 {
		t.Errorf("the second request carries %d bytes: the arguments were sent back", len(b))
	}
	results, refused := map[string]string{}, 0
	for _, m := range reqs[1].Messages {
		if m.ToolCallID == "" {
			continue
		}
		results[m.ToolCallID] = m.Content
		if strings.Contains(m.Content, "at most 32 tool calls run in one turn") {
			refused++
		}
	}
	if refused != 12 {
		t.Errorf("%d calls refused, want 12 of 44", refused)
	}
	for id, want := range map[string]string{"args": "over the 262144-byte limit", "timeout": "clamped",
		"long": "exit status 0", "background": "exit status 0"} {
		if !strings.Contains(results[id], want) {
			t.Errorf("%s: %q, want %q", id, clipStr(results[id], 300), want)
		}
	}
	if _, err := os.Stat(filepath.Join(sample, "big.txt")); err == nil {
		t.Error("the call with oversized arguments ran")
	}
	pid, _ := os.ReadFile(filepath.Join(sample, "child.pid"))
	if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err != nil {
		t.Errorf("child.pid: %q; the command said %q", pid, clipStr(results["background"], 500))
	} else {
		// SIGKILL is delivered asynchronously: on a loaded machine the child
		// may take a moment to die. It must be gone (or a zombie) soon.
		alive := func() bool { return sleeperAlive(n) }
		for deadline := time.Now().Add(time.Minute); alive() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		}
		if alive() {
			t.Errorf("the background child %d outlived its command", n)
		}
	}
	total := 0
	for _, n := range c.notifications("agent/event") {
		total += len(n)
	}
	if total > 4<<20 {
		t.Errorf("%d bytes of events: the arguments reached the editor", total)
	}
}

// A hostile repository: links out of the project, to /proc/self/environ and
// /dev/zero, a FIFO, a FIFO where a manifest belongs, a symlinked project
// root, and a selection outside every project. Nothing outside a project is
// read, no secret of the server's environment reaches the model or the
// editor, nothing hangs, and the server keeps serving. The repository is built
// at test time: git cannot hold a FIFO.
func TestHostileRepository(t *testing.T) {
	const secret = "HOSTILE_SECRET=sk-must-not-leak-0451"
	srv := model(t, hostile(t, "escape-the-root.json"))
	sample := copyFixture(t, "sample")
	for name, target := range map[string]string{"passwd": "/etc/passwd", "environ": "/proc/self/environ", "zero": "/dev/zero"} {
		if err := os.Symlink(target, filepath.Join(sample, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(sample, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	py := copyFixture(t, "python")
	os.Symlink("/proc/self/environ", filepath.Join(py, ".python-version"))
	js := t.TempDir()
	syscall.Mkfifo(filepath.Join(js, "package.json"), 0o644)
	syscall.Mkfifo(filepath.Join(js, ".nvmrc"), 0o644)
	linked := filepath.Join(t.TempDir(), "linked")
	os.Symlink(copyFixture(t, "other"), linked)

	c := startServer(t, envFor(t, srv, secret)...)
	inited := make(chan struct{})
	go func() {
		c.initialize(map[string]string{"sample": sample, "py": py, "js": js, "linked": linked}, nil)
		close(inited)
	}()
	select {
	case <-inited:
	case <-time.After(time.Minute):
		t.Fatal("initialize hung on a FIFO manifest")
	}
	var projects json.RawMessage
	if err := c.command("agent.projects", map[string]any{}, &projects); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(projects), "sk-must-not-leak") {
		t.Fatalf("agent.projects shows the server's environment: %s", clipStr(string(projects), 500))
	}
	var res runResult
	err := c.command("agent.run", map[string]any{"prompt": "what is in /etc/passwd?",
		"uri": "file:///etc/passwd", "range": map[string]any{"start": map[string]int{"line": 0, "character": 0}, "end": map[string]int{"line": 1, "character": 0}}}, &res)
	if err == nil || !strings.Contains(err.Error(), "outside every project") {
		t.Fatalf("a selection outside every project: %+v %v", res, err)
	}
	if err := c.command("agent.run", map[string]any{"prompt": "look around", "project": "sample"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	reqs := srv.Requests()
	all, _ := json.Marshal(reqs)
	for _, leak := range []string{"sk-must-not-leak", "root:x:0:0"} {
		if strings.Contains(string(all), leak) {
			t.Errorf("%q reached the model", leak)
		}
	}
	results := map[string]string{}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.ToolCallID != "" {
			results[m.ToolCallID] = m.Content
		}
	}
	for id, want := range map[string]string{"search": "greet.go:3: func Greet", "passwd": "symlink points outside",
		"environ": "symlink points outside", "fifo": "named pipe", "zero": "symlink points outside",
		"dotdot": "outside", "list": "index.js"} {
		if !strings.Contains(results[id], want) {
			t.Errorf("%s: %q, want %q", id, clipStr(results[id], 300), want)
		}
	}
}

// A model server that holds each stream's body open after [DONE] (the
// HTTP/1.1 last chunk never comes): each turn goes on at [DONE], the next
// request gives the held connection up after a bound and takes another,
// and the run ends instead of waiting for each body until the attempt's
// timeout.
func TestHostileHeldStreamEnds(t *testing.T) {
	srv := model(t, hostile(t, "held-stream-ends.json"))
	sample := copyFixture(t, "sample")
	c := startServer(t, envFor(t, srv)...)
	c.initialize(map[string]string{"sample": sample}, nil)
	var res runResult
	done := make(chan error, 1)
	go func() { done <- c.command("agent.run", map[string]any{"prompt": "look around"}, &res) }()
	select {
	case err := <-done:
		if err != nil || res.Status != "done" || res.Reply != "Read it and listed the files." {
			t.Fatalf("%+v %v", res, err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run waited for the held bodies")
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d model requests, want 3", n)
	}
}

// sleeperAlive reports whether the command's `sleep 300` whose pid, as the
// command saw it, is n still runs: n is the host's pid, or (in the
// sandbox's PID namespace) the last of a process's NSpid.
func sleeperAlive(n int) bool {
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		status, err := os.ReadFile(filepath.Join("/proc", de.Name(), "status"))
		if err != nil || strings.Contains(string(status), "State:\tZ") {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			ids, ok := strings.CutPrefix(line, "NSpid:")
			f := strings.Fields(ids)
			if !ok || len(f) == 0 || f[len(f)-1] != strconv.Itoa(n) {
				continue
			}
			if cmd, _ := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline")); string(cmd) == "sleep\x00300\x00" {
				return true
			}
		}
	}
	return false
}
