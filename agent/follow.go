package agent

import (
	"slices"
	"sync"

	"github.com/agent-lsp/agent-lsp/agent/event"
)

// Subscriber is a connection that follows a session: Deliver queues one of
// the session's events, numbered and encoded once for every subscriber,
// and returns at once (a connection's bounded outbox): publishing never
// waits for a reader.
type Subscriber interface {
	Deliver(raw []byte, e event.Event)
}

// Broadcast is one live session's event broadcaster: its subscribers are
// the connections that follow the run, the run's own connection first
// among them, and each event published reaches every one of them once, in
// the order published. A Live owns one for its run; its subscribers leave
// with it (a session's next run starts with none). The zero value has no
// subscribers. Broadcast is safe for concurrent use; its lock is taken
// after Registry.mu, never with a Live's, and never held while a
// subscriber is called.
type Broadcast struct {
	mu   sync.Mutex   // guards subs
	subs []Subscriber // replaced, never changed in place: Publish reads it without the lock
}

// Follow makes s receive the events published from now on; a subscriber
// follows once however often it asks.
func (b *Broadcast) Follow(s Subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.subs, s) {
		b.subs = append(slices.Clip(b.subs), s)
	}
}

// leave drops s: its connection closed.
func (b *Broadcast) leave(s Subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.subs, s); i >= 0 {
		b.subs = slices.Delete(slices.Clone(b.subs), i, i+1)
	}
}

// Publish gives e, numbered already (Registry.Seq), to every subscriber,
// encoded once.
func (b *Broadcast) Publish(e event.Event) {
	b.mu.Lock()
	to := b.subs
	b.mu.Unlock()
	if len(to) == 0 {
		return
	}
	raw, err := e.MarshalJSON()
	if err != nil { // only an event without data fails
		return
	}
	for _, s := range to { // no lock held while calling a subscriber
		s.Deliver(raw, e)
	}
}

// sequence numbers each session's events in one sequence kept across its
// runs: a client orders and deduplicates a session's events by it. Its
// lock is taken alone.
type sequence struct {
	mu  sync.Mutex       // guards seq
	seq map[string]int64 // session -> seq of its last event
}

// Seq numbers the next event of session.
func (g *Registry) Seq(session string) int64 {
	q := &g.seq
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.seq == nil {
		q.seq = map[string]int64{}
	}
	q.seq[session]++
	return q.seq[session]
}

// Follow makes s follow session's running run (its Live's Broadcast) until
// the run ends or s leaves (Forget), and returns that broadcaster; nil when
// the session is not running. The run's own connection follows it at the
// run's first event; a connection that queues a prompt into it follows it
// too, and sees its prompt queued and the run go on.
func (g *Registry) Follow(session string, s Subscriber) *Broadcast {
	l := g.get(session)
	if l == nil {
		return nil
	}
	l.events.Follow(s)
	return &l.events
}

// Forget drops s from every running session: its connection closed.
func (g *Registry) Forget(s Subscriber) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range g.live {
		l.events.leave(s)
	}
}
