package server

import (
	"context"
	"errors"
	"fmt"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
)

// SessionsArgs filter agent.sessions.
type SessionsArgs struct {
	Project string `json:"project,omitempty"`
}

// SessionRow is one entry of agent.sessions.
type SessionRow struct {
	store.Session
	// NotStored marks a session kept in this window's memory only (the
	// store could not be opened): it is gone when the server ends.
	NotStored bool `json:"notStored,omitzero"` // omitzero: the server encodes with json/v2, whose omitempty keeps false
}

func (s *Server) sessionsCommand(ctx context.Context, call commandCall, a SessionsArgs) ([]SessionRow, error) {
	list, err := call.b.Store.Sessions(ctx, a.Project)
	if err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.sessions: %v", err)
	}
	rows := make([]SessionRow, len(list))
	for i, sess := range list {
		sess.Status = call.b.Status(sess)
		rows[i] = SessionRow{Session: sess, NotStored: call.b.NotStored}
	}
	return rows, nil
}

// SessionDetailArgs are agent.session's arguments: a session, and one of
// its subagents' contexts to read instead of its own run.
type SessionDetailArgs struct {
	Session string `json:"session" required:"true"`
	Context string `json:"context,omitempty"`
}

// SessionDetail is agent.session's result: a session (or one subagent's
// context of it) with its transcript and the subagents it started.
type SessionDetail struct {
	Session   string               `json:"session"`
	Context   string               `json:"context,omitempty"`
	Project   string               `json:"project"`
	Status    store.Status         `json:"status"`
	Title     string               `json:"title"`
	Messages  []message.Message    `json:"messages"`
	Subagents []agent.SubagentInfo `json:"subagents"`
}

// storedSession returns a stored session, or the JSON-RPC error command
// answers: InvalidParams for an unknown session.
func storedSession(ctx context.Context, b *Backend, command, id string) (store.Session, error) {
	sess, err := b.Store.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("%w %q", agent.ErrUnknownSession, id)
	}
	if err != nil {
		return store.Session{}, sessionError(command, err)
	}
	return sess, nil
}

func (s *Server) sessionCommand(ctx context.Context, call commandCall, a SessionDetailArgs) (SessionDetail, error) {
	sess, err := storedSession(ctx, call.b, "agent.session", a.Session)
	if err != nil {
		return SessionDetail{}, err
	}
	rt := call.b.Runtime
	msgs, err := rt.Transcript(ctx, a.Session, a.Context)
	if err != nil {
		return SessionDetail{}, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.session: load session %s: %v", a.Session, err)
	}
	subs, err := rt.Subagents(ctx, a.Session, a.Context)
	if err != nil {
		return SessionDetail{}, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.session: subagents of %s: %v", a.Session, err)
	}
	d := SessionDetail{Session: sess.ID, Context: a.Context, Project: sess.Project, Status: call.b.Status(sess), Title: sess.Title, Messages: msgs, Subagents: subs}
	if a.Context != "" {
		if len(msgs) == 0 {
			return SessionDetail{}, invalidParams("agent.session: session %s has no subagent context %q", a.Session, a.Context)
		}
		d.Status = ""
		for _, sub := range subs {
			if sub.ContextID == a.Context {
				d.Status = sub.Status
			}
		}
		if st, err := call.b.Store.Load(ctx, a.Session, a.Context); err == nil {
			d.Status, d.Title = st.Status, msgs[0].Content
		}
	}
	return d, nil
}

// DeleteResult is agent.deleteSession's result.
type DeleteResult struct {
	Deleted bool `json:"deleted"`
}

func (s *Server) deleteSessionCommand(ctx context.Context, call commandCall, a SessionArgs) (DeleteResult, error) {
	if call.b.Live().Running(a.Session) {
		return DeleteResult{}, invalidParams("agent.deleteSession: session %s is running; cancel it first", a.Session)
	}
	ok, err := call.b.Store.DeleteSession(ctx, a.Session)
	if err != nil {
		return DeleteResult{}, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.deleteSession: %v", err)
	}
	return DeleteResult{Deleted: ok}, nil
}
