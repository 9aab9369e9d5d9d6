package agent

import (
	"context"
	"errors"

	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
)

// Transcript returns the stored messages of a session's own run (contextID
// "") or of one of its subagents. A session with no checkpoint yet has none.
func (rt *Runtime) Transcript(ctx context.Context, session, contextID string) ([]message.Message, error) {
	return transcriptOf(ctx, rt.schema, rt.st, rt.cfg.Store, session, contextID)
}

// Transcript reads a session's transcript from a store without a runtime,
// for tools that only read sessions (agent-lsp sessions show).
func Transcript(ctx context.Context, cp store.Checkpointer, session, contextID string) ([]message.Message, error) {
	s, st := newSchema()
	return transcriptOf(ctx, s, st, cp, session, contextID)
}

func transcriptOf(ctx context.Context, s *graph.Schema, st schema, cp store.Checkpointer, session, contextID string) ([]message.Message, error) {
	state, _, err := s.Load(ctx, cp, session, contextID)
	if errors.Is(err, store.ErrNotFound) {
		return []message.Message{}, nil
	}
	if err != nil {
		return nil, err
	}
	msgs := st.messages.Get(state)
	if msgs == nil {
		msgs = []message.Message{}
	}
	return msgs, nil
}
