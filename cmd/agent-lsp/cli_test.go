//go:build unix

package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// TestHelpOnStdout: every command's --help goes to stdout (so that `| less`
// shows it) and exits 0.
func TestHelpOnStdout(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{{"--help"}, {"help"}, {"run", "--help"}, {"sessions", "--help"}, {"doctor", "--help"}, {"daemon", "--help"}, {"acp", "--help"}} {
		out, errOut, code := c.run(t, "", args...)
		if code != 0 || !strings.Contains(out, "Usage") || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// TestBadFlagInTwoLines: a bad flag is the error and one line pointing to
// --help, on stderr, and exit 2; never the whole usage.
func TestBadFlagInTwoLines(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "agent-lsp: flag provided but not defined: -bogus\nRun 'agent-lsp --help' for usage.\n"},
		{[]string{"run", "--bogus", "x"}, "agent-lsp run: flag provided but not defined: -bogus\nRun 'agent-lsp run --help' for usage.\n"},
		{[]string{"run", "--max-steps", "many", "x"}, "agent-lsp run: invalid value \"many\" for flag -max-steps: must be an integer, not \"many\"\nRun 'agent-lsp run --help' for usage.\n"},
		{[]string{"sessions", "--bogus"}, "agent-lsp sessions: flag provided but not defined: -bogus\nRun 'agent-lsp sessions --help' for usage.\n"},
		{[]string{"doctor", "--bogus"}, "agent-lsp doctor: flag provided but not defined: -bogus\nRun 'agent-lsp doctor --help' for usage.\n"},
	} {
		out, errOut, code := c.run(t, "", tc.args...)
		if code != 2 || out != "" || errOut != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", tc.args, code, out, errOut, tc.want)
		}
	}
}

// noKeyCommand is agent-lsp without an API key for OpenAI's endpoint (the
// default), every request of which would go through the proxy at proxy.
func noKeyCommand(t *testing.T, proxy string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "AGENT_LSP_") && !strings.HasPrefix(strings.ToUpper(kv), "HTTP") &&
			!strings.HasPrefix(strings.ToUpper(kv), "NO_PROXY") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AGENT_LSP_STORE="+filepath.Join(t.TempDir(), "s.db"), "HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy)
	ws := filepath.Join(t.TempDir(), "sample")
	os.CopyFS(ws, os.DirFS("../../testdata/workspaces/sample"))
	cmd.Dir = ws
	return cmd
}

// TestNoKeyExitsAtOnce: without a key for OpenAI's endpoint, a run exits 2
// within a second (beyond what starting the binary takes), says in one line what to set, and no request leaves
// (every one would go through the proxy, a listener of the test).
func TestNoKeyExitsAtOnce(t *testing.T) {
	p := refusingProxy(t)
	proxy := p.url
	for _, json := range []bool{false, true} {
		args := []string{"run", "fix the test"}
		if json {
			args = []string{"run", "--json", "fix the test"}
		}
		cmd := noKeyCommand(t, proxy, args...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Fatalf("exit: %v\n%s", err, errOut.String())
		}
		// What the machine takes to start the binary at all (a race build, on
		// a loaded host) is not the run's: it is measured alongside.
		v := noKeyCommand(t, proxy, "version")
		vstart := time.Now()
		v.Run()
		if base := time.Since(vstart); took > base+time.Second {
			t.Errorf("the run took %s to say there is no key (starting the binary: %s)", took, base)
		}
		want := "agent-lsp run: no API key: https://api.openai.com/v1 needs one and OPENAI_API_KEY is not set; set it, or give --base-url of a server that needs none (e.g. http://localhost:11434/v1 for Ollama)\n"
		if errOut.String() != want {
			t.Errorf("stderr:\n%s\nwant:\n%s", errOut.String(), want)
		}
		if json {
			if _, res := jsonLines(t, out.String()); res["reason"] != "no-api-key" || res["status"] != "failed" {
				t.Errorf("result %v", res)
			}
		} else if out.Len() != 0 {
			t.Errorf("stdout %q", out.String())
		}
	}
	if n := p.conns.Load(); n != 0 {
		t.Fatalf("%d connection(s) went out", n)
	}
}

// proxyCounter is a proxy listener of the test that counts the connections
// made to it and closes each at once.
type proxyCounter struct {
	url   string
	conns atomic.Int32
}

func refusingProxy(t *testing.T) *proxyCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &proxyCounter{url: "http://" + ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.conns.Add(1)
			c.Close()
		}
	}()
	return p
}

// TestTranscriptSpeaksToPeople: a denied command shows inline with the rule
// that allows it; the closing line has steps, edits, tokens and cost, in
// right plurals; a failure is said once, without the server's internal words.
func TestTranscriptSpeaksToPeople(t *testing.T) {
	c := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "make lint"})}},
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("edit_file", map[string]any{"path": "greet.go", "old_text": "Hello", "new_text": "Hej"})}},
		scripted.Turn{Text: "Done.", Usage: &scripted.Usage{Prompt: 1000, Completion: 500}})
	out, errOut, code := c.run(t, "", "run", "--prices", "scripted=1/2", "make it swedish")
	if code != 0 || out != "Done.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "  ✗ not allowed: make lint (allow it with --allow \"make lint\")\n") {
		t.Errorf("no inline denial with its rule:\n%s", errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "session s-") || !strings.Contains(last, ": done after 5 steps, 1 edit, ") || !strings.Contains(last, " tokens, $") {
		t.Errorf("closing line %q", last)
	}

	c = newCLI(t, scripted.Turn{Error: &scripted.HTTPError{Status: 400, Message: "the model refused the request"}})
	_, errOut, code = c.run(t, "", "run", "hi")
	if code != 1 || strings.Count(errOut, "the model refused the request") != 1 {
		t.Errorf("exit %d; the failure is not said once:\n%s", code, errOut)
	}
	if !strings.Contains(errOut, ": failed after 0 steps, 0 edits, 0 tokens") {
		t.Errorf("closing line:\n%s", errOut)
	}
	for _, args := range [][]string{{"run", "x"}, {"run", "--session", "s-nope", "x"}, {"run", "--resume", "s-nope"}} {
		_, errOut, _ := c.run(t, "", args...)
		for _, internal := range []string{"node agent", "agent.run", "agent.resume", "this window", "[redacted]"} {
			if strings.Contains(errOut, internal) {
				t.Errorf("%v: %q in:\n%s", args, internal, errOut)
			}
		}
	}
}
