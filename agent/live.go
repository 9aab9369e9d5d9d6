package agent

import (
	"context"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
)

// Registry is the process's live sessions: one Live per session running
// now. The core owns it (server/session: one per process, which every
// connection's runtime shares: one store, one registry) and passes it where
// it is needed; a Runtime holds none. A run begins here (Run, Resume): a
// prompt for a session that is live is sent to its Live (Live.Send), else
// the registry registers the session live and has the runtime run its graph
// for that Live (Runtime.Start, Runtime.Resume). So a session running in
// one window is busy in every other, and a prompt sent from another window
// is sent to its Live. Registry is safe for concurrent use.
//
// Lock order: Registry.mu, then Live.mu, then the kernel's (Graph.mu, a
// runner's inbox); or Registry.mu, then a Live's Broadcast.mu; the
// sequence's lock is taken alone.
// No lock is held while a hook, a model, an event callback or a
// subscriber is called.
type Registry struct {
	mu   sync.Mutex       // guards live
	live map[string]*Live // session ID -> its live session

	seq sequence // each session's event sequence, across its runs (follow.go)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{live: map[string]*Live{}} }

// Live is one running session, the single owner of what its run shares
// with the rest of the process: its graph thread (the runtime whose graph
// runs it, set once the run has started its graph), its inbox of queued
// prompts, its cancel and done, its lease, and its event broadcaster. Only a
// Live calls the kernel's Graph.Queue for its thread: a prompt from any
// window is sent through it (Send), so no runtime reaches another's graph.
// The registry makes it (begin) and removes it when its run ends.
type Live struct {
	session string
	stored  store.Session // the session as its run begins: stored, or new (set by begin, then read-only)
	cancel  context.CancelFunc
	done    chan struct{} // closed once the run has ended and left the registry
	release func()        // gives the session's lease back (store.Leases); set before the run starts
	events  Broadcast     // the run's subscribers: its own connection and those that follow it

	mu    sync.Mutex                 // guards owner, run and held
	owner *Runtime                   // the runtime whose graph runs the thread
	run   *run                       // the session's own run, once its graph has started
	held  map[string]message.Message // the inbox: queued prompts by ID, until the run reads them
}

// Running reports whether a session has a run in progress.
func (g *Registry) Running(session string) bool { return g.get(session) != nil }

// Count is how many sessions are running.
func (g *Registry) Count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.live)
}

// Cancel cancels a session's running run and reports whether one was running.
func (g *Registry) Cancel(session string) bool {
	l := g.get(session)
	if l != nil {
		l.cancel()
	}
	return l != nil
}

// get returns a session's live session, nil when it is not running.
func (g *Registry) get(session string) *Live {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live[session]
}

// begin registers sess as live, and takes its lease in st
// (store.Leases), until the returned func is called; errBusy when it is
// live already.
func (g *Registry) begin(ctx context.Context, st store.Store, sess store.Session) (context.Context, *Live, func(), error) {
	ctx, l, end, err := g.register(ctx, sess)
	if err != nil {
		return nil, nil, nil, err
	}
	// A store several processes share (PostgreSQL) keeps the session to
	// one of them; one process's (a bbolt file) has nothing to keep apart.
	l.release, err = st.Acquire(ctx, sess.ID, leaseTTL, l.cancel) // a lost lease cancels the run: it checkpoints and resumes elsewhere
	if err != nil {
		end()
		return nil, nil, nil, err
	}
	return ctx, l, func() {
		l.release()
		end()
	}, nil
}

// register makes sess's Live, without a lease.
func (g *Registry) register(ctx context.Context, sess store.Session) (context.Context, *Live, func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, busy := g.live[sess.ID]; busy {
		return nil, nil, nil, errBusy(sess.ID)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Live{session: sess.ID, stored: sess, cancel: cancel, done: make(chan struct{})}
	g.live[sess.ID] = l
	return ctx, l, func() {
		cancel()
		g.mu.Lock()
		delete(g.live, sess.ID)
		g.mu.Unlock()
		close(l.done)
	}, nil
}

// Done is closed once the session's run has ended.
func (l *Live) Done() <-chan struct{} { return l.done }

// started records the graph thread of the live session once rt's graph
// runs it.
func (l *Live) started(rt *Runtime, r *run) {
	l.mu.Lock()
	l.owner, l.run = rt, r
	l.mu.Unlock()
	r.live = l
}

// thread returns the runtime and run of the session's graph thread; nil
// while the run is starting.
func (l *Live) thread() (*Runtime, *run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner, l.run
}

// hold keeps a queued prompt until the run reads it.
func (l *Live) hold(m message.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[string]message.Message{}
	}
	l.held[m.ID] = m
}

// take removes a queued prompt from the inbox: the run read it, or it
// could not be queued.
func (l *Live) take(id string) (message.Message, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, ok := l.held[id]
	delete(l.held, id)
	return m, ok
}

// unread returns the texts of the queued prompts the run ended without
// reading, in queue order.
func (l *Live) unread(ids []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, id := range ids {
		if m, ok := l.held[id]; ok {
			out = append(out, m.Content)
		}
	}
	return out
}

// leaseTTL is how long a session's lease outlives a holder that stopped
// renewing it (a crashed or frozen runner): then another process may
// resume the session.
const leaseTTL = 15 * time.Second
