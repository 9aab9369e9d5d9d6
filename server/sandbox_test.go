//go:build unix

package server_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// sandboxRun runs one turn of run_command calls through the real server on a
// copy of the sample project, with its own HOME and TMPDIR beside it, and
// returns what each call's tool result said, by call ID.
func sandboxRun(t *testing.T, lines map[string]string, initOpts map[string]any, extraEnv ...string) (results map[string]string, root, home, outside string, c *lspClient) {
	t.Helper()
	var calls []scripted.ToolCall
	for _, id := range sortedKeys(lines) {
		calls = append(calls, withID(call("run_command", map[string]any{"command": lines[id]}), id))
	}
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{ToolCalls: calls}, {Text: "done"}}})
	base := t.TempDir()
	root, home, outside = copyFixture(t, "sample"), filepath.Join(base, "home"), filepath.Join(base, "outside")
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{home, outside, tmp, filepath.Join(root, ".git", "hooks")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644)
	// The Go caches stay the machine's (the test builds the sample), so HOME is the only redirected place.
	gocache, _ := os.UserCacheDir()
	env := append(envFor(t, srv, "HOME="+home, "TMPDIR="+tmp, "GOCACHE="+filepath.Join(gocache, "go-build"), "GOMODCACHE="+filepath.Join(os.Getenv("HOME"), "go", "pkg", "mod")), extraEnv...)
	c = startServer(t, env...)
	c.initialize(map[string]string{"sample": root}, initOpts)
	c.askResult = func(json.RawMessage) any { return map[string]string{"title": "Allow once"} }
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "run them"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	results = map[string]string{}
	for _, m := range srv.Requests()[1].Messages {
		if m.ToolCallID != "" {
			results[m.ToolCallID] = m.Content
		}
	}
	return results, root, home, outside, c
}

func landlockABI(t *testing.T, c *lspClient) int {
	var projects []struct {
		Sandbox struct {
			Mode        string   `json:"mode"`
			LandlockABI int      `json:"landlockABI"`
			Enforced    []string `json:"enforced"`
		} `json:"sandbox"`
	}
	if err := c.command("agent.projects", map[string]any{}, &projects); err != nil {
		t.Fatal(err)
	}
	return projects[0].Sandbox.LandlockABI
}

// countingListener listens on a loopback TCP port until the test ends and
// sends true on connected for each connection it accepts.
func countingListener(t *testing.T) (net.Listener, chan bool) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	connected := make(chan bool, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connected <- true
			c.Close()
		}
	}()
	return ln, connected
}

// abstractListener listens on an abstract Unix socket until the test ends
// and returns its name (without the leading @).
func abstractListener(t *testing.T) string {
	t.Helper()
	abstract := fmt.Sprintf("agent-lsp-e2e-%d", os.Getpid())
	aln, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { aln.Close() })
	go func() {
		for {
			c, err := aln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return abstract
}

func TestSandboxedCommands(t *testing.T) {
	ln, connected := countingListener(t)
	abstract := abstractListener(t)
	lines := map[string]string{
		"home":      "touch $HOME/pwned-home",
		"outside":   "touch ../../outside/pwned 2>&1 || touch $TMPDIR/../outside/pwned",
		"protected": "echo '[alias] x = !touch pwned' >> .git/config && printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit && mkdir -p .vscode && echo '{}' > .vscode/tasks.json",
		"inside":    "echo ok > made-inside.txt && echo ok > $TMPDIR/made-in-temp.txt",
		"network":   fmt.Sprintf("bash -c 'echo hi > /dev/tcp/127.0.0.1/%d'", ln.Addr().(*net.TCPAddr).Port),
		"abstract":  fmt.Sprintf(`python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('\0%s')"`, abstract),
		"test":      "test",
	}
	res, root, home, outside, c := sandboxRun(t, lines, map[string]any{"permissions": map[string]any{"allow": []string{"touch *", "echo *", "python3 *"}}})
	if abi := landlockABI(t, c); abi < 6 {
		t.Skipf("this kernel's Landlock ABI is %d; these checks need 6", abi)
	}
	// With namespaces the command's /tmp is its own, which hides HOME and
	// outside (both under the test's /tmp): there is nothing to block.
	for _, id := range []string{"home", "outside", "network", "abstract"} {
		if !strings.Contains(res[id], "blocked by the sandbox") && !(id == "home" || id == "outside") {
			t.Errorf("%s: %q", id, res[id])
		}
	}
	if _, err := os.Stat(filepath.Join(home, "pwned-home")); err == nil {
		t.Error("a command wrote into $HOME")
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Error("a command wrote outside the project")
	}
	if len(connected) > 0 {
		t.Error("a command reached a local listener")
	}
	// The command that changed them hears of it (at once, or pending while
	// other commands of the turn still run).
	for _, f := range []string{".git/config", ".git/hooks/pre-commit", ".vscode/tasks.json"} {
		if !strings.Contains(res["protected"], f) {
			t.Errorf("protected: %q does not name %s", res["protected"], f)
		}
	}
	for _, f := range []string{".git/hooks/pre-commit", ".vscode/tasks.json"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s was not removed", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".git", "config")); strings.Contains(string(b), "alias") {
		t.Error(".git/config kept the command's change")
	}
	if !strings.Contains(res["inside"], "exit status 0") || !strings.Contains(res["test"], "exit status 0") || !strings.Contains(res["test"], "ok") {
		t.Errorf("inside: %q\ntest: %q", res["inside"], res["test"])
	}

	// With the network allowed for the project, the connection goes through.
	res, _, _, _, _ = sandboxRun(t, map[string]string{"network": lines["network"]}, map[string]any{"sandbox": map[string]any{"network": []string{"sample"}}})
	if !strings.Contains(res["network"], "exit status 0") || len(connected) != 1 {
		t.Errorf("network allowed: %q (%d connections)", res["network"], len(connected))
	}
}

// Without Landlock (the setting pretends the kernel has none) commands run
// unconfined, so the project's own test asks too, and agent.projects says so.
func TestWithoutLandlockEveryCommandAsks(t *testing.T) {
	var asked []string
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "test"})}}, {Text: "done"}}})
	c := startServer(t, envFor(t, srv, "AGENT_LSP_LANDLOCK=false")...)
	c.initialize(map[string]string{"sample": copyFixture(t, "sample")}, nil)
	c.askResult = func(p json.RawMessage) any {
		var req struct{ Message string }
		json.Unmarshal(p, &req)
		asked = append(asked, req.Message)
		return map[string]string{"title": "Deny"}
	}
	if abi := landlockABI(t, c); abi != 0 {
		t.Fatalf("landlockABI %d with Landlock turned off", abi)
	}
	var res runResult
	if err := c.command("agent.run", map[string]any{"prompt": "test"}, &res); err != nil || res.Status != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "not sandboxed here") {
		t.Fatalf("asked %q", asked)
	}
	logs := ""
	for _, n := range c.notifications("window/logMessage") {
		logs += string(n)
	}
	if !strings.Contains(logs, "commands are not sandboxed") {
		t.Fatalf("the user was not told: %s", logs)
	}
}
