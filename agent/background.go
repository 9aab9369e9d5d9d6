package agent

import (
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
)

// newBackground returns the background processes of a run of session:
// their output goes to the session's folder beside the store (deleted with
// the session), or a temporary folder when the store keeps none.
func (rt *Runtime) newBackground(session string) *tools.Background {
	dir := func() string {
		if sp, ok := rt.cfg.Store.(store.Spools); ok {
			return sp.SpoolDir(session)
		}
		return ""
	}
	return tools.NewBackground(max(rt.cfg.MaxBackground, 0), dir)
}
