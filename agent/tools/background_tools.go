package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// ProcessTools are the tools that reach background processes.
var ProcessTools = []string{"process_output", "process_wait", "process_stop"}

// startBackground starts line in the background for run_command: after the
// permission (always asked where the sandbox has no namespaces: there a
// process could outlive its run, and the snapshot of protected paths is
// held while it runs) and the intent.
func startBackground(ctx context.Context, env *Env, p *workspace.Project, kind, line string, policy sandbox.Policy, confined bool, in sandbox.Inspection) (Result, error) {
	if env.Background == nil || env.Background.max <= 0 {
		return errorf("background processes are off here (the background processes setting is 0, or this run cannot keep them); run the command without background")
	}
	iso := sandbox.None
	if confined {
		iso = env.Sandbox.Isolation(policy)
	}
	if res, ok := env.allow(ctx, p, kind, line, confined, in, iso); !ok {
		return res, nil
	}
	unsaved := saveForCommand(ctx, env, p)
	if err := env.intend(ctx, Intent{Command: line, Background: true}); err != nil {
		return errNotRecorded(fmt.Sprintf("starting %q", line), err), nil
	}
	spec := startSpec{project: p.Name(), root: p.Root(), line: line, env: env.commandEnv(), policy: policy, watch: env.WatchBackground}
	if confined {
		spec.sb = env.Sandbox
	}
	proc, err := env.Background.start(spec)
	if err != nil {
		return errorf("%v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%sstarted %s in the background: $ %s\n", unsaved, proc.id, Clip(line, 200))
	b.WriteString("Read its output with process_output, wait for it to end with process_wait, end it with process_stop. It ends when this run ends.")
	switch {
	case iso == sandbox.Namespaces && !policy.Network:
		b.WriteString(" The project's network is off: a server it starts is reachable only from inside it, not from other commands.")
	case iso != sandbox.Namespaces:
		b.WriteString(" It is not confined to namespaces here: processes it moves out of its process group may outlive it.")
	}
	return Result{Content: b.String(), Summary: fmt.Sprintf("%s started: %s", proc.id, Clip(line, 80))}, nil
}

var processOutput = Tool{
	Name:        "process_output",
	Description: "Show a background process's status and new output (since you last looked, or from since_byte).",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"id": {"type": "string", "description": "The process's ID (p1, ...)."},
		"since_byte": {"type": "integer", "description": "Output from this byte offset."}
		}, "required": ["id"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct {
			ID    string
			Since *int64 `json:"since_byte"`
		}
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, err := env.background(a.ID)
		if err != nil {
			return errorf("%v", err)
		}
		return p.report(a.Since, env.maxOutput()-512), nil
	},
}

var processWait = Tool{
	Name:        "process_wait",
	Description: "Wait until a background process ends or timeout_seconds pass; then as process_output.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"id": {"type": "string", "description": "The process's ID (p1, ...)."},
		"timeout_seconds": {"type": "integer", "description": "Default 30, at most 600."}
		}, "required": ["id"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct {
			ID      string
			Timeout int `json:"timeout_seconds"`
		}
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, err := env.background(a.ID)
		if err != nil {
			return errorf("%v", err)
		}
		timer := time.NewTimer(commandTimeout(a.Timeout, 30*time.Second))
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
		return p.report(nil, env.maxOutput()-512), nil
	},
}

var processStop = Tool{
	Name:        "process_stop",
	Description: "Stop a background process and all it started; then as process_output.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"id": {"type": "string", "description": "The process's ID (p1, ...)."}
		}, "required": ["id"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct{ ID string }
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, err := env.background(a.ID)
		if err != nil {
			return errorf("%v", err)
		}
		p.stop()
		return p.report(nil, env.maxOutput()-512), nil
	},
}

// background returns the run's process with ID id.
func (e *Env) background(id string) (*process, error) {
	if e.Background == nil {
		return nil, errors.New("this run has no background processes")
	}
	return e.Background.get(strings.TrimSpace(id))
}

// report is what the process tools show of p: its status, then its output
// from since (nil: where the model last stopped reading), at most limit
// bytes: the first limit bytes from an explicit since, else the newest.
func (p *process) report(since *int64, limit int) Result {
	end, done := p.ended()
	status := "running"
	switch {
	case !done:
		status = fmt.Sprintf("running (started %s ago)", time.Since(p.started).Round(time.Second))
	case end.stopped:
		status = "stopped"
	case end.code >= 0:
		status = fmt.Sprintf("exited with status %d", end.code)
	default:
		status = "killed by a signal"
	}
	total := p.out.Total()
	p.mu.Lock()
	from := p.read
	p.mu.Unlock()
	if since != nil {
		from = *since
	} else if total-from > int64(limit) {
		from = total - int64(limit) // the newest output
	}
	data, got, total := p.out.read(from, max(limit, minCut))
	data, got = runeAligned(data, got)
	next := got + int64(len(data))
	p.mu.Lock()
	p.read = max(p.read, next)
	p.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n$ %s\n", p.id, status, Clip(p.command, 200))
	if got > from {
		fmt.Fprintf(&b, "[bytes %d-%d are not shown: ", from, got)
		if since == nil {
			b.WriteString("older than what fits here; ask for them with since_byte]\n")
		} else {
			b.WriteString("dropped, the output kept on disk is bounded]\n")
		}
	}
	switch {
	case len(data) == 0:
		fmt.Fprintf(&b, "[no new output; %d bytes in all]", total)
	default:
		fmt.Fprintf(&b, "[output bytes %d-%d of %d]\n%s", got, next, total, data)
		if next < total {
			fmt.Fprintf(&b, "\n[more output: process_output with since_byte %d]", next)
		}
	}
	if done && end.note != "" {
		b.WriteString(end.note)
	}
	return Result{Content: b.String(), Summary: p.id + ": " + status}
}

// runeAligned drops the bytes of a character cut at either end of b (which
// starts at offset off) and returns it with its new offset.
func runeAligned(b []byte, off int64) ([]byte, int64) {
	for i := 0; i < len(b) && i < utf8.UTFMax && !isRuneStart(b[0]); i++ {
		b, off = b[1:], off+1
	}
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if isRuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return b, off
}
