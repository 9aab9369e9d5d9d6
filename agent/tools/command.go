package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// DefaultScrubEnv are the patterns of environment variables commands never
// get: credentials, and sockets that lead out of the project (an SSH agent,
// the editor, a Docker daemon). A pattern's * matches any text.
var DefaultScrubEnv = []string{"*_TOKEN", "*_SECRET", "*_SECRET_KEY", "*_PASSWORD", "*_API_KEY", "*_ACCESS_KEY",
	"AWS_*", "PGPASSWORD", "DATABASE_URL", "SSH_AUTH_SOCK", "NVIM", "NVIM_LISTEN_ADDRESS", "VSCODE_IPC_HOOK*", "DOCKER_HOST"}

// ScrubEnv returns environ without the variables keyVars name (the API key's)
// and those matching any of patterns, and without the store setting
// AGENT_LSP_STORE when it holds a URL (it may carry credentials).
func ScrubEnv(environ []string, keyVars, patterns []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		drop := slices.Contains(keyVars, name) || (name == "AGENT_LSP_STORE" && strings.Contains(value, "://"))
		for _, p := range patterns {
			drop = drop || globMatch(p, name)
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// globMatch matches s against a pattern whose only special character is *.
func globMatch(pattern, s string) bool {
	head, rest, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == s
	}
	if !strings.HasPrefix(s, head) {
		return false
	}
	for i := len(head); i <= len(s); i++ {
		if globMatch(rest, s[i:]) {
			return true
		}
	}
	return false
}

func (e *Env) commandEnv() []string {
	if e.CommandEnv != nil {
		return e.CommandEnv
	}
	return ScrubEnv(os.Environ(), []string{"OPENAI_API_KEY"}, DefaultScrubEnv)
}

var runCommand = Tool{
	Name: "run_command",
	Description: "Run a shell command in the project root and return its exit status and output. " +
		"Use \"build\" or \"test\" to run the project's own build or test command (recorded as the project's build/test status; it runs without asking unless you changed the files that define it). " +
		"Other commands need the user's permission and may be denied. Commands do not get API keys, tokens or passwords from the environment.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"command": {"type": "string", "description": "\"build\", \"test\", or a shell command line."},
		"timeout_seconds": {"type": "integer", "description": "Give up after this many seconds (default 120)."},
		` + projectArg + `}, "required": ["command"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct {
			Command, Project string
			Timeout          int `json:"timeout_seconds"`
		}
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, err := env.project(a.Project)
		if err != nil {
			return errorf("%v", err)
		}
		stack := p.Info().TechStack
		kind, line := "", strings.TrimSpace(a.Command)
		switch {
		case line == "build" || (line == stack.BuildCommand && line != ""):
			kind, line = "build", stack.BuildCommand
		case line == "test" || (line == stack.TestCommand && line != ""):
			kind, line = "test", stack.TestCommand
		}
		if line == "" {
			return errorf("project %s has no %s command", p.Name(), a.Command)
		}
		req := CommandRequest{Session: env.Session, Project: p.Name(), Command: line, Trusted: kind != ""}
		if req.Trusted && env.Trust != nil && env.Trust.Changed(p.Name()) {
			req.Trusted = false
			req.Note = fmt.Sprintf("The agent changed a file that defines the %s commands of %s in this session, so its %s asks.", p.Name(), p.Name(), kind)
		}
		if env.Permissions == nil {
			return errorf("running %q needs permission and nobody can grant it here", line)
		}
		perm, err := env.Permissions.AllowCommand(ctx, req)
		if err != nil {
			return errorf("asking permission for %q: %v", line, err)
		}
		if !perm.Allowed {
			return Result{Content: fmt.Sprintf("error: running %q was not allowed: %s", line, perm.Reason), IsError: true, Summary: "not allowed: " + line}, nil
		}
		timeout := env.CommandTimeout
		if a.Timeout > 0 {
			timeout = time.Duration(a.Timeout) * time.Second
		}
		if timeout <= 0 {
			timeout = 2 * time.Minute
		}
		record := func(o workspace.Outcome) {
			switch kind {
			case "build":
				p.SetBuild(o)
			case "test":
				p.SetTest(o)
			}
		}
		record(workspace.Outcome{Status: workspace.StatusPending, Command: line})
		out, code, err := execute(ctx, p.Root(), line, timeout, env.commandEnv())
		status := workspace.StatusSuccess
		var header string
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			status = workspace.StatusFailed
			header = fmt.Sprintf("timed out after %s", timeout)
		case err != nil:
			status = workspace.StatusFailed
			header = "could not run: " + err.Error()
		case code != 0:
			status = workspace.StatusFailed
			header = fmt.Sprintf("exit status %d", code)
		default:
			header = "exit status 0"
		}
		record(workspace.Outcome{Status: status, Command: line, Summary: header + lastLine(out)})
		if status == workspace.StatusFailed {
			p.AddError(fmt.Sprintf("%s: %s%s", line, header, lastLine(out)))
		}
		content := fmt.Sprintf("$ %s\n%s\n%s", line, header, Cut(out, env.maxOutput()-len(line)-64))
		return Result{Content: content, IsError: status == workspace.StatusFailed, Summary: line + ": " + header}, nil
	},
}

func lastLine(out string) string {
	out = strings.TrimSpace(out)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if out == "" {
		return ""
	}
	return ": " + clip(out, 200)
}

// execute runs line with sh in dir and environment env, killing its whole
// process group on timeout or cancellation.
func execute(ctx context.Context, dir, line string, timeout time.Duration, env []string) (string, int, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if cctx.Err() != nil {
		if ctx.Err() != nil {
			return buf.String(), -1, ctx.Err()
		}
		return buf.String(), -1, context.DeadlineExceeded
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return buf.String(), exit.ExitCode(), nil
	}
	return buf.String(), 0, err
}
