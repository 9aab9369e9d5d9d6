package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agent-lsp/agent-lsp/workspace"
)

var runCommand = Tool{
	Name: "run_command",
	Description: "Run a shell command in the project root and return its exit status and output. " +
		"Use \"build\" or \"test\" to run the project's own build or test command (always allowed, and recorded as the project's build/test status). " +
		"Other commands need the user's permission and may be denied.",
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
		if kind == "" {
			if env.Permissions == nil {
				return errorf("running %q needs permission and nobody can grant it here", line)
			}
			ok, err := env.Permissions.AllowCommand(ctx, CommandRequest{Session: env.Session, Project: p.Name(), Command: line})
			if err != nil {
				return errorf("asking permission for %q: %v", line, err)
			}
			if !ok {
				return Result{Content: fmt.Sprintf("error: the user denied running %q", line), IsError: true, Summary: "denied: " + line}, nil
			}
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
		out, code, err := execute(ctx, p.Root(), line, timeout)
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

// execute runs line with sh in dir, killing its whole process group on timeout
// or cancellation.
func execute(ctx context.Context, dir, line string, timeout time.Duration) (string, int, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "-c", line)
	cmd.Dir = dir
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
