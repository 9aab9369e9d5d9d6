package agent

import (
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// MaxBackgroundLinger bounds Config.BackgroundLinger.
const MaxBackgroundLinger = time.Hour

// lingering holds the background processes that Config.BackgroundLinger
// lets outlive the run that started them: by session, each until its
// timer ends it, the session's next run takes it over (adopt), or the
// runtime closes (its window or server ends).
type lingering struct {
	mu     sync.Mutex // guards held and closed
	held   map[string]*lingerer
	closed bool
}

// lingerer is one session's processes and the timer that ends them.
type lingerer struct {
	bg    *tools.Background
	timer *time.Timer
}

// linger keeps bg's running processes for d after their run ended, and
// reports whether it did (false: there are none, d is 0, or the runtime
// is closed; the caller closes bg).
func (l *lingering) linger(session string, bg *tools.Background, d time.Duration) bool {
	if d <= 0 || len(bg.Running()) == 0 {
		return false
	}
	d = min(d, MaxBackgroundLinger)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if l.held == nil {
		l.held = map[string]*lingerer{}
	}
	if old := l.held[session]; old != nil && old.bg != bg { // cannot happen: a session's next run adopts them
		old.timer.Stop()
		go old.bg.Close()
	}
	g := &lingerer{bg: bg}
	g.timer = time.AfterFunc(d, func() {
		l.mu.Lock()
		if l.held[session] == g {
			delete(l.held, session)
		}
		l.mu.Unlock()
		bg.Close()
	})
	l.held[session] = g
	return true
}

// adopt hands the session's lingering processes to its new run (nil when
// none): they are the run's again, and end with it.
func (l *lingering) adopt(session string) *tools.Background {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.held[session]
	if g == nil || !g.timer.Stop() {
		return nil // none, or its timer is closing them now
	}
	delete(l.held, session)
	return g.bg
}

// get is the session's lingering processes (nil when none).
func (l *lingering) get(session string) *tools.Background {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g := l.held[session]; g != nil {
		return g.bg
	}
	return nil
}

// sessions are the sessions with lingering processes.
func (l *lingering) sessions() map[string]*tools.Background {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]*tools.Background, len(l.held))
	for s, g := range l.held {
		out[s] = g.bg
	}
	return out
}

// close ends every lingering process and lingers none from now on.
func (l *lingering) close() {
	l.mu.Lock()
	l.closed = true
	held := l.held
	l.held = nil
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, g := range held {
		g.timer.Stop()
		wg.Go(g.bg.Close)
	}
	wg.Wait()
}

// Close ends what the runtime keeps beyond its runs: the background
// processes lingering after theirs (Config.BackgroundLinger). The server
// calls it when the window's connection ends.
func (rt *Runtime) Close() { rt.lingering.close() }

// adoptBackground gives r, a session's run about to start its graph, the
// processes its session's last run left lingering: the model reaches them
// by their IDs again, and they end with r. Called before r is published
// (Live.started), so nothing else reads r.acc.bg yet.
func (rt *Runtime) adoptBackground(r *run) {
	if bg := rt.lingering.adopt(r.session.ID); bg != nil {
		r.acc.bg = bg
	}
}
