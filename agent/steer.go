package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
)

// errNotRunning: the session has no run to queue a prompt for.
var errNotRunning = errors.New("session is not running")

// queue gives a prompt to the session's running run: it is stored at once
// and read at the run's next step boundary. errNotRunning when the session
// is not running (or its run has just ended: then once it has).
func (rt *Runtime) queue(ctx context.Context, req Request) (Result, error) {
	a, r := rt.runs.get(req.Session)
	if a == nil {
		return Result{}, errNotRunning
	}
	if r == nil { // the run is starting: it will take input once it has
		return Result{}, errBusy(req.Session)
	}
	owner := a.rt // the run may be another window's (a shared Runs): its graph holds the inbox
	project := r.session.Project
	if p, ok := owner.cfg.Workspace.Project(project); ok && owner != rt {
		local, ok := rt.cfg.Workspace.ProjectAt(p.Root())
		if !ok {
			return Result{}, fmt.Errorf("%w: session %s works in %s: open folder %s in this window to continue it", ErrFolderNotOpen, req.Session, p.Root(), p.Root())
		}
		if req.Project == local.Name() {
			req.Project = project
		}
	}
	if req.Project != "" && req.Project != project {
		return Result{}, fmt.Errorf("%w: a prompt for a running session runs in its project (%s); switch projects after it ends", ErrSessionBusy, project)
	}
	text, err := rt.promptText(req)
	if err != nil {
		return Result{}, err
	}
	imgs, err := rt.promptImages(ctx, r, project, req.Images)
	if err != nil {
		return Result{}, err
	}
	if text, err = owner.promptHooks(ctx, r, project, text); err != nil {
		return Result{}, err // a queued prompt passes the prompt hooks too
	}
	human := message.NewHuman(text)
	human.Name = "human@" + project
	human.Images = refs(imgs)
	r.hold(human)
	pos, err := owner.graph.Queue(ctx, owner.graphConfig(r, 0), human.ID, graph.NewPatch(owner.st.messages.Append(human), owner.st.images.Add(imgs...)))
	if errors.Is(err, graph.ErrNotRunning) {
		r.drop(human.ID)
		select { // the run is ending; the prompt starts the next one
		case <-a.done:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
		return Result{}, errNotRunning
	}
	if err != nil {
		r.drop(human.ID)
		return Result{}, err
	}
	r.emit(event.MessageQueued{Message: human, Position: pos})
	return Result{Session: r.session.ID, Status: StatusQueued, Position: pos}, nil
}

// acceptsInput says whether a state may take a queued prompt: not while the
// newest AI message has tool calls without answers.
func (rt *Runtime) acceptsInput(s graph.State) bool {
	msgs := rt.st.messages.Get(s)
	ai, idx := lastAI(msgs)
	if idx < 0 || len(ai.ToolCalls) == 0 {
		return true
	}
	answered := 0
	for _, m := range msgs[idx+1:] {
		if m.Role == message.Tool {
			answered++
		}
	}
	return answered >= len(ai.ToolCalls)
}

// hold keeps a queued prompt until the run reads it.
func (r *run) hold(m message.Message) {
	r.inbox.Lock()
	defer r.inbox.Unlock()
	if r.inbox.held == nil {
		r.inbox.held = map[string]message.Message{}
	}
	r.inbox.held[m.ID] = m
}

func (r *run) drop(id string) {
	r.inbox.Lock()
	defer r.inbox.Unlock()
	delete(r.inbox.held, id)
}

// graphEvent turns the kernel's report of an applied input into the
// message event of the prompt it was.
func (r *run) graphEvent(e graph.Event) {
	if e.Type != graph.InputApplied {
		return
	}
	r.inbox.Lock()
	m, ok := r.inbox.held[e.TaskID]
	delete(r.inbox.held, e.TaskID)
	r.inbox.Unlock()
	if ok {
		r.emit(event.Message{Message: m})
	}
}

// unread returns the texts of the queued prompts the run ended without
// reading, in queue order.
func (r *run) unread(ids []string) []string {
	r.inbox.Lock()
	defer r.inbox.Unlock()
	var out []string
	for _, id := range ids {
		if m, ok := r.inbox.held[id]; ok {
			out = append(out, m.Content)
		}
	}
	return out
}
