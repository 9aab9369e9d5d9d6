package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/store"
)

// execute runs what the flags ask for: agent.run (a new session,
// --session's, or --continue's with a prompt) or agent.resume (--resume, or
// --continue without a prompt). With --output-schema the prompt describes
// the answer's shape, and an answer that is not valid is sent back once
// with what is wrong; invalid twice, the run failed.
func (cl *client) execute(ctx context.Context, conn jsonrpc2.Conn, f runFlags, prompt, token string) resultLine {
	session, resume := f.session, f.resume
	if f.fork != "" {
		id, n, _ := parseFork(f.fork) // checked by runFlags.check
		var fork server.ForkResult
		if _, err := conn.Call(ctx, "workspace/executeCommand", map[string]any{"command": "agent.fork",
			"arguments": []any{server.ForkArgs{Session: id, Checkpoint: n}}}, &fork); err != nil {
			return rpcFailed(err)
		}
		session = fork.Session
	}
	if f.continueLast {
		id, res, ok := newest(ctx, conn, f, prompt == "")
		if !ok {
			return res
		}
		if prompt == "" {
			resume = id
		} else {
			session = id
		}
	}
	var schema json.RawMessage
	if f.schema != nil {
		schema = f.schema.raw
		if prompt != "" {
			prompt += f.schema.instructions()
		}
	}
	call := func(command string, args any) resultLine {
		var res agent.Result
		if _, err := conn.Call(ctx, "workspace/executeCommand", map[string]any{"command": command, "arguments": []any{args}, "workDoneToken": token}, &res); err != nil {
			return rpcFailed(err)
		}
		return resultLine{Result: res}
	}
	var res resultLine
	if resume != "" {
		res = call("agent.resume", server.ResumeArgs{Session: resume, OutputSchema: schema, Mode: f.mode})
	} else {
		run := server.RunArgs{Prompt: prompt, Project: f.project, Session: session, OutputSchema: schema, Mode: f.mode, Isolation: f.isolation}
		for _, img := range f.images {
			run.Images = append(run.Images, server.ImageRef{Path: img})
		}
		res = call("agent.run", run)
	}
	if res.Status == store.StatusDone && res.Steps == 0 {
		res.builtin = server.Builtin(prompt)
	}
	if f.schema == nil || res.Status != store.StatusDone || res.builtin != "" {
		return res
	}
	out, err := f.schema.check(res.Reply)
	if err != nil {
		again := call("agent.run", server.RunArgs{Prompt: f.schema.correction(err), Session: res.Session, OutputSchema: schema, Mode: f.mode})
		res = res.then(again)
		if res.Status != store.StatusDone {
			return res
		}
		if out, err = f.schema.check(res.Reply); err != nil {
			res.Status, res.Error = store.StatusFailed, err.Error()+" (after one correction)"
			return res
		}
	}
	res.output = out
	return res
}

// then is the result of r followed by next in the same session: next's
// status and reply, the counts of both.
func (r resultLine) then(next resultLine) resultLine {
	next.Steps += r.Steps
	next.Edits += r.Edits
	next.Usage = next.Usage.Add(r.Usage)
	if next.Session == "" {
		next.Session = r.Session
	}
	return next
}

// storedSession is what --continue reads of agent.sessions.
type storedSession struct {
	Session string       `json:"session"`
	Root    string       `json:"root"`
	Status  store.Status `json:"status"`
}

// newest finds the newest session of the run's workspace folders for
// --continue. Without a prompt it must be resumable (interrupted,
// cancelled, failed or at its limit); one that is done, or none, is a usage
// error that says what to do.
func newest(ctx context.Context, conn jsonrpc2.Conn, f runFlags, resume bool) (string, resultLine, bool) {
	var list []storedSession
	if _, err := conn.Call(ctx, "workspace/executeCommand", map[string]any{"command": "agent.sessions", "arguments": []any{map[string]any{}}}, &list); err != nil {
		return "", rpcFailed(err), false
	}
	for _, s := range list { // newest first
		if !slices.Contains(f.workspaces, s.Root) {
			continue
		}
		switch {
		case !resume:
			return s.Session, resultLine{}, true
		case s.Status == store.StatusDone:
			return "", failed(fmt.Errorf("--continue: the newest session of this workspace, %s, is done: give a prompt to continue it", s.Session), true), false
		case s.Status == "running":
			return "", failed(fmt.Errorf("--continue: the newest session of this workspace, %s, is running: give a prompt to queue one for it, or wait", s.Session), true), false
		}
		return s.Session, resultLine{}, true
	}
	return "", failed(fmt.Errorf("--continue: no session of this workspace yet: run without --continue to start one"), true), false
}
