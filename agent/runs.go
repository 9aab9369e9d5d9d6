package agent

import (
	"context"
	"sync"
	"time"
)

// Runs is the registry of the sessions running now. A runtime has its own
// unless Config.Runs gives one that several runtimes share (the daemon's
// connections: one store, one registry), so that a session running in one
// window is busy in every other, and a prompt sent from another window is
// queued into its run. Runs is safe for concurrent use.
type Runs struct {
	mu     sync.Mutex            // guards active
	active map[string]*activeRun // session ID -> its running run
}

// NewRuns returns an empty registry.
func NewRuns() *Runs { return &Runs{active: map[string]*activeRun{}} }

// activeRun is a session's run in progress.
type activeRun struct {
	rt     *Runtime // the runtime whose graph runs it
	cancel context.CancelFunc
	run    *run          // set once the run has started its graph
	done   chan struct{} // closed when the run has ended
}

// Running reports whether a session has a run in progress.
func (rs *Runs) Running(session string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	_, ok := rs.active[session]
	return ok
}

// Count is how many sessions are running.
func (rs *Runs) Count() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.active)
}

// cancel cancels a session's running run and reports whether one was running.
func (rs *Runs) cancel(session string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	a, ok := rs.active[session]
	if ok {
		a.cancel()
	}
	return ok
}

// begin marks session as running in rt until the returned func is called.
func (rs *Runs) begin(ctx context.Context, rt *Runtime, session string) (context.Context, *activeRun, func(), error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, busy := rs.active[session]; busy {
		return nil, nil, nil, errBusy(session)
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &activeRun{rt: rt, cancel: cancel, done: make(chan struct{})}
	rs.active[session] = a
	return ctx, a, func() {
		cancel()
		rs.mu.Lock()
		delete(rs.active, session)
		rs.mu.Unlock()
		close(a.done)
	}, nil
}

// started records the run of an active session once it exists.
func (rs *Runs) started(a *activeRun, r *run) {
	rs.mu.Lock()
	a.run = r
	rs.mu.Unlock()
}

// get returns a session's active run and its run, nil when it has none.
func (rs *Runs) get(session string) (*activeRun, *run) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	a := rs.active[session]
	if a == nil {
		return nil, nil
	}
	return a, a.run
}

// leaseTTL is how long a session's lease outlives a holder that stopped
// renewing it (a crashed or frozen runner): then another process may
// resume the session.
const leaseTTL = 15 * time.Second

// begin registers session as running in this process (Runs.begin) and
// takes its lease in the store (store.Leases).
func (rt *Runtime) begin(ctx context.Context, session string) (context.Context, *activeRun, func(), error) {
	ctx, a, end, err := rt.runs.begin(ctx, rt, session)
	if err != nil {
		return ctx, a, end, err
	}
	// A store several processes share (PostgreSQL) keeps the session to
	// one of them; one process's (a bbolt file) has nothing to keep apart.
	release, err := rt.cfg.Store.Acquire(ctx, session, leaseTTL, a.cancel) // a lost lease cancels the run: it checkpoints and resumes elsewhere
	if err != nil {
		end()
		return nil, nil, nil, err
	}
	return ctx, a, func() {
		release()
		end()
	}, nil
}
