package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent"
)

// undoRewind is agent.rewind with undo: the session's newest rewind taken
// back (agent/undo.go): its files put back as they were before it, through
// the editor as one edit labelled "Undo the rewind to before prompt N"
// (a file changed since the rewind is a conflict, asked about as in a
// rewind), then its conversation brought back. Refusals (no rewind, a
// conversation that went on since, pruned contents, a file now outside its
// project) come before anything changes.
func (s *Server) undoRewind(ctx context.Context, call commandCall, session string) (RewindResult, error) {
	rt := call.b.Runtime
	res := RewindResult{Undone: true, Restored: []FileRef{}, Conflicts: []RewindConflict{}, NotRestorable: []NotRestorable{}}
	err := call.b.Live().CheckRewindable(ctx, rt, session, func() error {
		plan, err := rt.PlanUndo(ctx, session)
		if errors.Is(err, agent.ErrCannotUndo) {
			return &rewindRefusal{err}
		}
		if err != nil {
			return err
		}
		res.Checkpoint, res.Rewind = plan.From, plan.ID
		ask := restoreAsk{label: fmt.Sprintf("Undo the rewind to before prompt %d", plan.From), since: "since the rewind"}
		if _, err := s.restoreFiles(ctx, call.b, ask, plan.Files, &res); err != nil {
			return err
		}
		if err := rt.UndoRewind(ctx, session, plan); err != nil {
			return err
		}
		res.Conversation = plan.Conversation
		return nil
	})
	if err != nil {
		return RewindResult{}, rewindError("agent.rewind", err)
	}
	return res, nil
}
