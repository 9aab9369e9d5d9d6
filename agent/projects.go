package agent

import (
	"bytes"
	"encoding/json"

	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// keepProjects makes the session keep its projects' context: at a run's
// first step it restores what the session stored into the projects of this
// workspace that know nothing yet (a new process), and at every step it
// stores what changed since. It returns the step's write, if any.
func (rt *Runtime) keepProjects(r *run, s graph.State) []graph.Write {
	stored := rt.st.projects.Get(s)
	if !r.restored {
		r.restored = true
		for _, saved := range stored {
			if p, ok := rt.cfg.Workspace.ProjectAt(saved.Root); ok {
				p.Restore(saved)
			}
		}
	}
	var now []workspace.Saved
	for _, p := range rt.cfg.Workspace.Projects() {
		if saved, ok := p.Saved(); ok {
			now = append(now, saved)
		}
	}
	// Projects of the session not open in this window stay as stored.
	for _, saved := range stored {
		if _, ok := rt.cfg.Workspace.ProjectAt(saved.Root); !ok {
			now = append(now, saved)
		}
	}
	a, _ := json.Marshal(stored)
	b, _ := json.Marshal(now)
	if bytes.Equal(a, b) || len(now) == 0 && len(stored) == 0 {
		return nil
	}
	return []graph.Write{rt.st.projects.Set(now)}
}
