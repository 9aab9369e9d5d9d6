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

func (s *Server) sessionsCommand(ctx context.Context, call commandCall, a SessionsArgs) ([]store.Session, error) {
	list, err := call.b.Store.Sessions(ctx, a.Project)
	if err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.sessions: %v", err)
	}
	if list == nil {
		list = []store.Session{}
	}
	return list, nil
}

// SessionDetail is agent.session's result: a session and its transcript.
type SessionDetail struct {
	Session  string            `json:"session"`
	Project  string            `json:"project"`
	Status   store.Status      `json:"status"`
	Title    string            `json:"title"`
	Messages []message.Message `json:"messages"`
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

func (s *Server) sessionCommand(ctx context.Context, call commandCall, a SessionArgs) (SessionDetail, error) {
	sess, err := storedSession(ctx, call.b, "agent.session", a.Session)
	if err != nil {
		return SessionDetail{}, err
	}
	msgs, err := call.b.Runtime.Transcript(ctx, a.Session, "")
	if err != nil {
		return SessionDetail{}, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.session: load session %s: %v", a.Session, err)
	}
	return SessionDetail{Session: sess.ID, Project: sess.Project, Status: sess.Status, Title: sess.Title, Messages: msgs}, nil
}

// DeleteResult is agent.deleteSession's result.
type DeleteResult struct {
	Deleted bool `json:"deleted"`
}

func (s *Server) deleteSessionCommand(ctx context.Context, call commandCall, a SessionArgs) (DeleteResult, error) {
	if call.b.Runtime.Running(a.Session) {
		return DeleteResult{}, invalidParams("agent.deleteSession: session %s is running; cancel it first", a.Session)
	}
	ok, err := call.b.Store.DeleteSession(ctx, a.Session)
	if err != nil {
		return DeleteResult{}, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.deleteSession: %v", err)
	}
	return DeleteResult{Deleted: ok}, nil
}
