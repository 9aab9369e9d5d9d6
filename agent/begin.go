package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// Run runs the prompt of req in a new or existing session on rt until the
// agent answers, the step limit is hit, the run is cancelled or fails. A
// prompt for a session that is live is sent to its Live instead
// (Live.Send: see Result): the running run reads it at its next step.
// Otherwise rt prepares the session, the registry registers it live with
// its lease (begin) and rt runs its graph for that Live (Runtime.Start).
func (g *Registry) Run(ctx context.Context, rt *Runtime, req Request) (Result, error) {
	if req.Retry {
		req.Retry = false
		return g.Retry(ctx, rt, req)
	}
	if strings.TrimSpace(req.Prompt) == "" && len(req.Images) == 0 {
		return Result{}, errors.New("prompt is empty")
	}
	if req.Session != "" {
		if l := g.get(req.Session); l != nil {
			if res, err := l.Send(ctx, rt, req); !errors.Is(err, errNotRunning) {
				return res, err
			}
		}
		if g.Running(req.Session) {
			return Result{}, errBusy(req.Session)
		}
	}
	sess, err := rt.prepare(ctx, req)
	if err != nil {
		return Result{}, err
	}
	ctx, l, end, err := g.begin(ctx, rt.cfg.Store, sess)
	if err != nil {
		return Result{}, err
	}
	defer end()
	return rt.Start(ctx, l, req)
}

// Resume continues the interrupted run of session req.Session on rt from
// its last checkpoint: the registry registers it live with its lease
// (begin) and rt resumes its graph for that Live (Runtime.Resume).
func (g *Registry) Resume(ctx context.Context, rt *Runtime, req Request) (Result, error) {
	if g.Running(req.Session) {
		return Result{}, errBusy(req.Session)
	}
	sess, err := rt.resumable(ctx, req)
	if err != nil {
		return Result{}, err
	}
	ctx, l, end, err := g.begin(ctx, rt.cfg.Store, sess)
	if err != nil {
		return Result{}, err
	}
	defer end()
	return rt.Resume(ctx, l, req)
}

// SwitchProject moves session, which must not be live, to another project
// of rt's workspace (Runtime.switchProject).
func (g *Registry) SwitchProject(ctx context.Context, rt *Runtime, session, project string) error {
	if g.Running(session) {
		return errBusy(session)
	}
	return rt.switchProject(ctx, session, project)
}

// Process is a running background process of a session's run.
type Process struct {
	Session string
	tools.ProcessInfo
}

// Processes lists the background processes running now in the live
// sessions (every window's, in a daemon) and those rt keeps of its ended
// runs (Config.BackgroundLinger), ordered by session and start.
func (g *Registry) Processes(rt *Runtime) []Process {
	g.mu.Lock()
	lives := maps.Clone(g.live)
	g.mu.Unlock()
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

// StopProcess stops background process id of session's running run (or
// of its ended run that rt keeps), and returns once every process of it is
// gone.
func (g *Registry) StopProcess(rt *Runtime, session, id string) error {
	var r *run
	if l := g.get(session); l != nil {
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
