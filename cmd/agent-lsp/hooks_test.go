//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// runHooked runs the binary with the user's configuration folder xdg.
func (c *cli) runHooked(t *testing.T, xdg string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := c.command(args...)
	tmp := filepath.Join(t.TempDir(), "tmp") // the sandbox's writable temporary directory: not where tests look for escapes
	os.Mkdir(tmp, 0o700)
	cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+xdg, "TMPDIR="+tmp)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func userHooks(t *testing.T, doc string) string {
	xdg := t.TempDir()
	os.MkdirAll(filepath.Join(xdg, "agent-lsp"), 0o755)
	if err := os.WriteFile(filepath.Join(xdg, "agent-lsp", "hooks.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return xdg
}

func lastToolMessage(t *testing.T, srv *scripted.Server) string {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[1].Messages
	return msgs[len(msgs)-1].Content
}

// The user's own pre_tool hook on run_command exits 2 with a reason: the
// command does not run and the model reads the reason; their post_tool
// hook appends every call to a log. Both file shapes.
func TestHeadlessUserHooks(t *testing.T) {
	for shape, wrap := range map[string]func(string) string{
		"plain":   func(s string) string { return s },
		"wrapped": func(s string) string { return `{"hooks": ` + s + `}` },
	} {
		t.Run(shape, func(t *testing.T) {
			cl := newCLI(t,
				scripted.Turn{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "touch ran"})}},
				scripted.Turn{Text: "done"})
			log := filepath.Join(t.TempDir(), "calls.log")
			xdg := userHooks(t, wrap(`{
				"pre_tool": [{"matcher": "run_command", "command": "grep -q touch && { echo 'touch is not allowed by the team policy' >&2; exit 2; }; exit 0"}],
				"post_tool": [{"command": "cat >> `+log+`; echo >> `+log+`"}]}`))
			out, errOut, code := cl.runHooked(t, xdg, "run", "--no-daemon", "--workspace", cl.workspace, "--allow", "touch *", "make a file")
			if code != 0 || strings.TrimSpace(out) != "done" {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			if _, err := os.Stat(filepath.Join(cl.workspace, "ran")); err == nil {
				t.Fatal("the blocked command ran")
			}
			if tm := lastToolMessage(t, cl.srv); !strings.Contains(tm, "a hook blocked it") || !strings.Contains(tm, "touch is not allowed by the team policy") {
				t.Fatalf("the model read %q", tm)
			}
			// The blocked call has no post_tool; a second run's allowed call does.
			cl.srv.SetScript(scripted.Script{Turns: []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "echo hi"})}}, {Text: "done"}}})
			if _, errOut, code := cl.runHooked(t, xdg, "run", "--no-daemon", "--workspace", cl.workspace, "--allow", "echo *", "say hi"); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			b, _ := os.ReadFile(log)
			if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"event":"post_tool"`) ||
				!strings.Contains(lines[0], `"tool":"run_command"`) || !strings.Contains(lines[0], `exit status 0`) {
				t.Fatalf("log: %s", b)
			}
		})
	}
}

// A hook that never ends is killed at its bound, reported, and the run
// goes on; a hooks file with an entry of an unknown field reports it and
// does not run it.
func TestHeadlessHookBounded(t *testing.T) {
	cl := newCLI(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{})}},
		scripted.Turn{Text: "done"})
	marker := filepath.Join(t.TempDir(), "matched-all")
	xdg := userHooks(t, `{"pre_tool": [{"command": "sleep 100000"}, {"matchr": "list_files", "command": "touch `+marker+`"}]}`)
	start := time.Now()
	out, errOut, code := cl.runHooked(t, xdg, "run", "--no-daemon", "--workspace", cl.workspace, "--hook-timeout", "1", "list")
	if code != 0 || strings.TrimSpace(out) != "done" || time.Since(start) > 60*time.Second {
		t.Fatalf("exit %d after %s: %s %s", code, time.Since(start), out, errOut)
	}
	if !strings.Contains(errOut, "timed out after 1s") || !strings.Contains(errOut, `unknown field "matchr"`) {
		t.Fatalf("stderr: %s", errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("an entry with an unknown field ran")
	}
}

var hookHash = regexp.MustCompile(`--allow-hooks ([0-9a-f]{64})`)

// A repository's .agents/hooks.json does not run headless without
// --allow-hooks (the output names the flag and the hooks' hash); it runs
// with a bare --allow-hooks (the output names the hash it ran) and with
// --allow-hooks HASH, and a changed hook under the old hash does not run.
// It runs in the sandbox: it cannot write outside the project.
func TestHeadlessRepositoryHooks(t *testing.T) {
	if sb, err := sandbox.New(true); err != nil || sb.ABI() == 0 {
		t.Skip("repository hooks run only in the sandbox, and this kernel has no Landlock")
	}
	outside := filepath.Join(t.TempDir(), "escaped")
	define := func(cl *cli, extra string) {
		os.MkdirAll(filepath.Join(cl.workspace, ".agents"), 0o755)
		doc := `{"post_tool": [{"command": "cat >> hooks.log; echo >> hooks.log; touch ` + outside + ` 2>/dev/null; true` + extra + `"}]}`
		os.WriteFile(filepath.Join(cl.workspace, ".agents", "hooks.json"), []byte(doc), 0o644)
	}
	script := func(cl *cli) {
		cl.srv.SetScript(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{})}}, {Text: "done"}}})
	}
	xdg := t.TempDir()
	ran := func(cl *cli) bool {
		_, err := os.Stat(filepath.Join(cl.workspace, "hooks.log"))
		return err == nil
	}

	cl := newCLI(t)
	script(cl)
	define(cl, "")
	_, errOut, code := cl.runHooked(t, xdg, "run", "--no-daemon", "--workspace", cl.workspace, "list")
	m := hookHash.FindStringSubmatch(errOut)
	if code != 0 || ran(cl) || m == nil || !strings.Contains(errOut, "were not run") || !strings.Contains(errOut, "post_tool: cat >> hooks.log") {
		t.Fatalf("without --allow-hooks: exit %d, ran %v: %s", code, ran(cl), errOut)
	}
	hash := m[1]

	script(cl)
	_, errOut, code = cl.runHooked(t, xdg, "run", "--no-daemon", "--workspace", cl.workspace, "--allow-hooks", "list")
	if code != 0 || !ran(cl) || !strings.Contains(errOut, "allowed by a bare --allow-hooks") || !strings.Contains(errOut, hash) {
		t.Fatalf("bare --allow-hooks: exit %d, ran %v: %s", code, ran(cl), errOut)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("a repository hook wrote outside the project: it did not run in the sandbox")
	}

	os.Remove(filepath.Join(cl.workspace, "hooks.log"))
	script(cl)
	_, errOut, code = cl.runHooked(t, xdg, "run", "--no-daemon", "--workspace", cl.workspace, "--allow-hooks", hash, "list")
	if code != 0 || !ran(cl) || strings.Contains(errOut, "were not run") {
		t.Fatalf("--allow-hooks HASH: exit %d, ran %v: %s", code, ran(cl), errOut)
	}

	os.Remove(filepath.Join(cl.workspace, "hooks.log"))
	define(cl, "; curl -s http://example.invalid")
	script(cl)
	_, errOut, code = cl.runHooked(t, xdg, "run", "--no-daemon", "--workspace", cl.workspace, "--allow-hooks", hash, "list")
	m = hookHash.FindStringSubmatch(errOut)
	if code != 0 || ran(cl) || m == nil || m[1] == hash {
		t.Fatalf("a changed hook under the old hash: exit %d, ran %v: %s", code, ran(cl), errOut)
	}
}

// A prompt hook that exits 2 refuses the prompt: the model is not called,
// the run fails (exit 1) with the hook's reason; a prompt hook's output
// otherwise joins the prompt.
func TestHeadlessPromptHook(t *testing.T) {
	cl := newCLI(t, scripted.Turn{Text: "done"})
	xdg := userHooks(t, `{"prompt": [{"command": "grep -q password && { echo 'do not paste passwords' >&2; exit 2; }; echo 'branch: main'"}]}`)
	out, errOut, code := cl.runHooked(t, xdg, "run", "--no-daemon", "--json", "--workspace", cl.workspace, "my password is hunter2")
	_, result := jsonLines(t, out)
	if code != 1 || len(cl.srv.Requests()) != 0 || !strings.Contains(result["error"].(string), "do not paste passwords") {
		t.Fatalf("exit %d, %d requests: %s %s", code, len(cl.srv.Requests()), out, errOut)
	}
	if _, errOut, code := cl.runHooked(t, xdg, "run", "--no-daemon", "--workspace", cl.workspace, "fix it"); code != 0 || !strings.Contains(firstRequestPrompt(cl.srv), "branch: main") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func firstRequestPrompt(srv *scripted.Server) string {
	reqs := srv.Requests()
	if len(reqs) == 0 {
		return ""
	}
	msgs := reqs[0].Messages
	return msgs[len(msgs)-1].Content
}
