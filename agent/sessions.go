package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

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

// switchProject moves a session that is not running (Registry.SwitchProject) to another project,
// through the graph (the session's one writer): the project channel is set
// and, when the history can take a message, a note tells the model; the
// session index follows. The next run or resume works in the new project.
func (rt *Runtime) switchProject(ctx context.Context, session, project string) error {
	if _, ok := rt.cfg.Workspace.Project(project); !ok {
		return fmt.Errorf("%w %q (projects: %s)", ErrUnknownProject, project, strings.Join(rt.cfg.Workspace.Names(), ", "))
	}
	sess, err := rt.session(ctx, session)
	if err != nil {
		return err
	}
	cfg := graph.Config{Thread: session, Checkpointer: rt.cfg.Store, Index: func(s graph.State, status graph.Status) *store.Session {
		sess.Status, sess.Updated, sess.Project = status, time.Now(), project
		if p, ok := rt.cfg.Workspace.Project(project); ok {
			sess.Root = p.Root()
		}
		sess.Messages = len(rt.st.messages.Get(s))
		return &sess
	}}
	err = rt.graph.Amend(ctx, cfg, func(s graph.State) graph.Patch {
		writes := []graph.Write{rt.st.project.Set(project)}
		if rt.acceptsInput(s) {
			note := message.NewHuman(fmt.Sprintf("(I switched this session to the project %s: work there from now on.)", project))
			note.Name = "human@" + project
			writes = append(writes, rt.st.messages.Append(note))
		}
		return graph.NewPatch(writes...)
	})
	if errors.Is(err, store.ErrNotFound) { // a session with no checkpoint yet: only its index entry
		sess.Project = project
		return rt.cfg.Store.PutSession(ctx, sess)
	}
	return err
}

// SubagentInfo is one subagent a session's run started.
type SubagentInfo struct {
	ContextID string       `json:"contextId"`
	Task      string       `json:"task"`
	Status    store.Status `json:"status"` // "" when it never checkpointed
}

// Subagents lists the subagents of a session's own run (or of a subagent's
// context), in the order they were called.
func (rt *Runtime) Subagents(ctx context.Context, session, contextID string) ([]SubagentInfo, error) {
	msgs, err := rt.Transcript(ctx, session, contextID)
	if err != nil {
		return nil, err
	}
	out := []SubagentInfo{}
	for _, m := range msgs {
		for i, c := range m.ToolCalls {
			if c.Name != "call_subagent" {
				continue
			}
			var a struct {
				Task string `json:"task"`
			}
			json.Unmarshal([]byte(c.Args), &a)
			info := SubagentInfo{ContextID: rt.subagentContext(ctx, session, m.ID, i, c.ID), Task: a.Task}
			if st, err := rt.cfg.Store.Load(ctx, session, info.ContextID); err == nil {
				info.Status = st.Status
			}
			out = append(out, info)
		}
	}
	return out, nil
}
