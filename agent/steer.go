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

// Send queues a prompt that from's window sent into the live session's
// run: the one way into a running session's graph, whichever runtime runs
// it. errNotRunning when its run has just ended (then once it has). from quotes its selection and reads its images (its window's
// files); the live session, which owns the thread, checks the images
// against its run's model (by the owner's settings: the model that will
// see them), passes the prompt through the prompt hooks of its run and
// queues it in its graph.
func (l *Live) Send(ctx context.Context, from *Runtime, req Request) (Result, error) {
	owner, r := l.thread()
	if r == nil { // the run is starting: it will take input once it has
		return Result{}, errBusy(req.Session)
	}
	project := r.session.Project
	local, err := from.localName(owner, req.Session, project)
	if err != nil {
		return Result{}, err
	}
	if req.Project == local {
		req.Project = project
	}
	if req.Project != "" && req.Project != project {
		return Result{}, fmt.Errorf("%w: a prompt for a running session runs in its project (%s); switch projects after it ends", ErrSessionBusy, project)
	}
	text, err := from.promptText(req)
	if err != nil {
		return Result{}, err
	}
	if err := owner.takesImages(ctx, r.model, req.Images); err != nil {
		return Result{}, err
	}
	imgs, err := from.readImages(local, req.Images, owner.cfg.ImageMaxBytes)
	if err != nil {
		return Result{}, err
	}
	if text, err = owner.promptHooks(ctx, r, project, text); err != nil {
		return Result{}, err // a queued prompt passes the prompt hooks too
	}
	human := message.NewHuman(text)
	human.Name = "human@" + project
	human.Images = refs(imgs)
	return l.enqueue(ctx, owner, r, human, imgs)
}

// localName is the name in rt's workspace of owner's project: the same
// folder, maybe named otherwise; ErrFolderNotOpen when rt lacks it.
func (rt *Runtime) localName(owner *Runtime, session, project string) (string, error) {
	p, ok := owner.cfg.Workspace.Project(project)
	if !ok || owner == rt {
		return project, nil
	}
	local, ok := rt.cfg.Workspace.ProjectAt(p.Root())
	if !ok {
		return "", fmt.Errorf("%w: session %s works in %s: open folder %s in this window to continue it", ErrFolderNotOpen, session, p.Root(), p.Root())
	}
	return local.Name(), nil
}

// enqueue holds human in the inbox and queues it, with its images, in the
// thread's graph: the one call of the kernel's Queue.
func (l *Live) enqueue(ctx context.Context, owner *Runtime, r *run, human message.Message, imgs []message.ImageData) (Result, error) {
	l.hold(human)
	pos, err := owner.graph.Queue(ctx, owner.graphConfig(r, 0), human.ID, graph.NewPatch(owner.st.messages.Append(human), owner.st.images.Add(imgs...)))
	if errors.Is(err, graph.ErrNotRunning) {
		l.take(human.ID)
		select { // the run is ending; the prompt starts the next one
		case <-l.done:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
		return Result{}, errNotRunning
	}
	if err != nil {
		l.take(human.ID)
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

// graphEvent turns the kernel's report of an applied input into the
// message event of the prompt it was.
func (r *run) graphEvent(e graph.Event) {
	if e.Type != graph.InputApplied || r.live == nil {
		return
	}
	if m, ok := r.live.take(e.TaskID); ok {
		r.acc.hist.begin(context.Background(), m.Content, m.ID, r.model)
		r.emit(event.Message{Message: m})
	}
}

// unread returns the texts of the queued prompts the run ended without
// reading, in queue order.
func (r *run) unread(ids []string) []string {
	if r.live == nil {
		return nil
	}
	return r.live.unread(ids)
}
