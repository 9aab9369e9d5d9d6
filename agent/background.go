package agent

import (
	"fmt"
	"maps"
	"slices"

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

// Process is a running background process of a session's run.
type Process struct {
	Session string
	tools.ProcessInfo
}

// Processes lists the background processes running now in the sessions
// running in this runtime's registry (every window's, in a daemon),
// ordered by session and start.
func (rt *Runtime) Processes() []Process {
	rt.reg.mu.Lock()
	lives := make(map[string]*Live, len(rt.reg.live))
	for id, l := range rt.reg.live {
		lives[id] = l
	}
	rt.reg.mu.Unlock()
	bgs := rt.lingering.sessions() // those of ended runs, when the setting keeps them
	for id, l := range lives {
		if _, r := l.thread(); r != nil {
			bgs[id] = r.acc.bg
		}
	}
	var out []Process
	for _, id := range slices.Sorted(maps.Keys(bgs)) {
		for _, p := range bgs[id].Running() {
			out = append(out, Process{Session: id, ProcessInfo: p})
		}
	}
	return out
}

// StopProcess stops background process id of session's running run, and
// returns once every process of it is gone.
func (rt *Runtime) StopProcess(session, id string) error {
	var r *run
	if l := rt.reg.get(session); l != nil {
		_, r = l.thread()
	}
	if r == nil {
		if bg := rt.lingering.get(session); bg != nil {
			return bg.Stop(id)
		}
		return fmt.Errorf("session %s is not running: its background processes ended with its run", session)
	}
	return r.acc.bg.Stop(id)
}
