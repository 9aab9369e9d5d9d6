package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// commandArgs is the one argument object every command takes.
type commandArgs struct {
	Prompt     *string          `json:"prompt"`
	Project    string           `json:"project"`
	Session    string           `json:"session"`
	URI        string           `json:"uri"`
	Range      *workspace.Range `json:"range"`
	Edits      string           `json:"edits"`
	Durability string           `json:"durability"`
}

func (s *Server) executeCommand(ctx context.Context, id jsonrpc2.ID, params json.RawMessage) (any, error) {
	var p struct {
		Command       string            `json:"command"`
		Arguments     []json.RawMessage `json:"arguments"`
		WorkDoneToken json.RawMessage   `json:"workDoneToken"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("workspace/executeCommand: %v", err)
	}
	var a commandArgs
	if len(p.Arguments) > 0 {
		if err := json.Unmarshal(p.Arguments[0], &a); err != nil {
			return nil, invalidParams("%s: arguments[0] must be an object with the command's fields: %v", p.Command, err)
		}
	}
	need := func(field, value string) error {
		if value == "" {
			return invalidParams("%s: missing required argument %q", p.Command, field)
		}
		return nil
	}
	s.mu.Lock()
	rt, ws, st := s.rt, s.ws, s.store
	s.mu.Unlock()
	switch p.Command {
	case "agent.run", "agent.resume":
		if p.Command == "agent.run" {
			if a.Prompt == nil || strings.TrimSpace(*a.Prompt) == "" {
				return nil, invalidParams("agent.run: missing required argument \"prompt\"")
			}
		} else if err := need("session", a.Session); err != nil {
			return nil, err
		}
		return s.run(ctx, id, p.Command, a, p.WorkDoneToken)
	case "agent.cancel":
		if err := need("session", a.Session); err != nil {
			return nil, err
		}
		if _, err := st.Session(ctx, a.Session); err != nil && !rt.Running(a.Session) {
			return nil, sessionError(err, a.Session)
		}
		return map[string]bool{"cancelled": rt.Cancel(a.Session)}, nil
	case "agent.sessions":
		list, err := st.Sessions(ctx, a.Project)
		if err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "list sessions: %v", err)
		}
		if list == nil {
			list = []store.Session{}
		}
		return list, nil
	case "agent.session":
		if err := need("session", a.Session); err != nil {
			return nil, err
		}
		sess, err := st.Session(ctx, a.Session)
		if err != nil {
			return nil, sessionError(err, a.Session)
		}
		msgs, err := Transcript(ctx, st, a.Session)
		if err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "load session %s: %v", a.Session, err)
		}
		return map[string]any{"session": sess.ID, "project": sess.Project, "status": sess.Status, "title": sess.Title, "messages": msgs}, nil
	case "agent.deleteSession":
		if err := need("session", a.Session); err != nil {
			return nil, err
		}
		if rt.Running(a.Session) {
			return nil, invalidParams("agent.deleteSession: session %s is running; cancel it first", a.Session)
		}
		ok, err := st.DeleteSession(ctx, a.Session)
		if err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "delete session: %v", err)
		}
		return map[string]bool{"deleted": ok}, nil
	case "agent.projects":
		out := []workspace.Snapshot{}
		for _, pr := range ws.Projects() {
			out = append(out, pr.Snapshot())
		}
		return out, nil
	case "agent.switchProject":
		if err := need("session", a.Session); err != nil {
			return nil, err
		}
		if err := need("project", a.Project); err != nil {
			return nil, err
		}
		if _, ok := ws.Project(a.Project); !ok {
			return nil, invalidParams("agent.switchProject: unknown project %q (projects: %s)", a.Project, strings.Join(ws.Names(), ", "))
		}
		if rt.Running(a.Session) {
			return nil, invalidParams("agent.switchProject: session %s is running", a.Session)
		}
		sess, err := st.Session(ctx, a.Session)
		if err != nil {
			return nil, sessionError(err, a.Session)
		}
		sess.Project = a.Project
		if err := st.PutSession(ctx, sess); err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "switch project: %v", err)
		}
		return map[string]string{"session": sess.ID, "project": a.Project}, nil
	case "":
		return nil, invalidParams("workspace/executeCommand: missing command")
	}
	return nil, invalidParams("unknown command %q (commands: %s)", p.Command, strings.Join(Commands, ", "))
}

func sessionError(err error, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return invalidParams("unknown session %q", id)
	}
	return jsonrpc2.Errorf(jsonrpc2.InternalError, "session %s: %v", id, err)
}

// Transcript returns a session's own messages (not its subagents').
func Transcript(ctx context.Context, st store.Store, session string) ([]message.Message, error) {
	state, err := st.Load(ctx, session, "")
	if errors.Is(err, store.ErrNotFound) {
		return []message.Message{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]message.Message, 0, len(state.Lists["messages"]))
	for _, it := range state.Lists["messages"] {
		var m message.Message
		if err := json.Unmarshal(it.Body, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// run executes agent.run or agent.resume: asynchronously, with progress,
// events, the editor and permission ports, and three ways to cancel.
func (s *Server) run(ctx context.Context, id jsonrpc2.ID, command string, a commandArgs, token json.RawMessage) (any, error) {
	jsonrpc2.Async(ctx) // from here on, later messages are handled while the run goes on
	s.mu.Lock()
	rt, st := s.rt, s.st
	progressCap := s.progressCap
	s.runs.Add(1)
	s.mu.Unlock()
	defer s.runs.Done()

	runCtx, cancel := context.WithCancel(jsonrpc2.DetachContext(ctx))
	defer cancel()
	go func() { // the request's own context ends when the connection does
		select {
		case <-ctx.Done():
			cancel()
		case <-runCtx.Done():
		}
	}()
	fl := &inflight{cancel: cancel}
	s.mu.Lock()
	s.inflight[id] = fl
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.inflight, id)
		s.mu.Unlock()
	}()

	mode := st.edits
	if a.Edits != "" {
		mode = a.Edits
	}
	if mode != "apply" && mode != "review" {
		return nil, invalidParams("%s: edits must be \"apply\" or \"review\", not %q", command, mode)
	}
	var dur store.Durability
	if a.Durability != "" {
		d, err := store.ParseDurability(a.Durability)
		if err != nil {
			return nil, invalidParams("%s: %v", command, err)
		}
		dur = d
	}
	req := agent.Request{Session: a.Session, Project: a.Project, MaxSteps: st.maxSteps, Durability: dur,
		Editor: &editor{s: s, review: mode == "review"}}
	if a.Prompt != nil {
		req.Prompt = *a.Prompt
	}
	if a.URI != "" && a.Range != nil {
		req.Selection = &agent.Selection{Path: filename(a.URI), Range: *a.Range}
	}
	if len(token) == 0 || string(token) == "null" {
		if progressCap {
			s.mu.Lock()
			s.tokenN++
			token = json.RawMessage(fmt.Sprintf(`"agent-lsp-%d"`, s.tokenN))
			s.mu.Unlock()
			if _, err := s.conn.Call(runCtx, "window/workDoneProgress/create", map[string]any{"token": token}, nil); err != nil {
				s.logf("window/workDoneProgress/create: %v", err)
				token = nil
			}
		} else {
			token = nil
		}
	}
	if token != nil {
		s.mu.Lock()
		s.tokens[string(token)] = fl
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.tokens, string(token))
			s.mu.Unlock()
		}()
	}
	sink := newSink(s, token, command, req.Prompt, a.Session)
	defer sink.close()
	req.Events = sink.event
	req.Permissions = &permissions{s: s, sink: sink}
	var res agent.Result
	var err error
	if command == "agent.run" {
		res, err = rt.Run(runCtx, req)
	} else {
		res, err = rt.Resume(runCtx, req)
	}
	if err != nil {
		sink.fail(err)
		switch {
		case errors.Is(err, agent.ErrUnknownSession), errors.Is(err, agent.ErrUnknownProject), errors.Is(err, agent.ErrSessionBusy), errors.Is(err, agent.ErrNoProject):
			return nil, invalidParams("%s: %v", command, err)
		}
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "%s: %v", command, err)
	}
	s.mu.Lock()
	byCancelReq := fl.byCancelReq
	s.mu.Unlock()
	if byCancelReq && res.Status == graph.StatusCancelled {
		return nil, jsonrpc2.Errorf(RequestCancelled, "agent.run cancelled by $/cancelRequest (session %s, status cancelled)", res.Session)
	}
	return res, nil
}
