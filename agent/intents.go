package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
)

// Intents (graph.RecordIntent) are recorded under the ID of the tool
// message that will answer the call (toolMessageID): unique in a session,
// unlike the model's call IDs.

// storedIntent returns the intent the interrupted run this one resumes
// recorded for call i of ai, if any.
func storedIntent(ctx context.Context, ai message.Message, i int) (tools.Intent, bool) {
	raw, ok := graph.Intent(ctx, toolMessageID(ai.ID, i))
	if !ok {
		return tools.Intent{}, false
	}
	var in tools.Intent
	if json.Unmarshal(raw, &in) != nil {
		return tools.Intent{Call: ai.ToolCalls[i].ID, Tool: ai.ToolCalls[i].Name}, true // unreadable: still never run blindly
	}
	return in, true
}

// callTool runs call i of ai, or settles it when the interrupted run this
// one resumes had begun it (its intent is stored): a file change already
// made is reported made, one not made and still valid is made now, and
// anything else (a command, a changed file) is never done again blindly.
// rest are the calls that follow it in its task.
func (rt *Runtime) callTool(ctx context.Context, r *run, env *tools.Env, ai message.Message, i int, rest []int) tools.Result {
	call := ai.ToolCalls[i]
	if res, refused := r.refuseUnoffered(call.Name); refused {
		return res
	}
	in, ok := storedIntent(ctx, ai, i)
	if !ok {
		return rt.toolHooks(ctx, r, usedProject(rt, call, env.Project), call, func() tools.Result { return r.tools.Call(ctx, env, call) })
	}
	var later []tools.Intent
	for _, j := range rest {
		if l, ok := storedIntent(ctx, ai, j); ok {
			later = append(later, l)
		}
	}
	res, rerun := r.tools.Settle(ctx, env, call, in, later)
	if rerun {
		return r.tools.Call(ctx, env, call)
	}
	return res
}

// intentPort is the tools.Env.Intent of call i of ai: it completes the
// intent with the call, opens the call's spool for a command, and stores it.
func (rt *Runtime) intentPort(ai message.Message, i int, sp *spool) func(context.Context, tools.Intent) error {
	call := ai.ToolCalls[i]
	return func(ctx context.Context, in tools.Intent) error {
		in.Call, in.Tool, in.Args, in.Started = call.ID, call.Name, tools.Hash(call.Args), time.Now()
		if in.Command != "" && sp != nil && sp.open() == nil {
			in.Spool = sp.path
		}
		body, err := json.Marshal(in)
		if err != nil {
			return err
		}
		return graph.RecordIntent(ctx, toolMessageID(ai.ID, i), body)
	}
}

// maxSpool bounds a command's spool: its first bytes are kept.
const maxSpool = 1 << 20

// spool is a command call's output file (mode 0600) in its session's
// folder beside the store (store.Spools), deleted with the session. It is
// created when the call's intent is recorded; writes before that, after a
// failure or past maxSpool are dropped, never failed.
type spool struct {
	path string

	mu sync.Mutex // guards f and n
	f  *os.File
	n  int64
}

// spoolFor returns the spool of the call answered by tool message key, nil
// when the store keeps no spools.
func (rt *Runtime) spoolFor(session, key string) *spool {
	sp, ok := rt.cfg.Store.(store.Spools)
	if !ok {
		return nil
	}
	dir := sp.SpoolDir(session)
	if dir == "" {
		return nil
	}
	return &spool{path: filepath.Join(dir, key+".out")}
}

func (s *spool) open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscallNoFollow, 0o600)
	if err != nil {
		return err
	}
	s.f = f
	return nil
}

// Write implements io.Writer.
func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil || s.n >= maxSpool {
		return len(p), nil
	}
	n, err := s.f.Write(p[:min(len(p), int(maxSpool-s.n))])
	s.n += int64(n)
	if err != nil {
		s.f.Close()
		s.f = nil
	}
	return len(p), nil
}

// close closes the file, if it was opened.
func (s *spool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}
