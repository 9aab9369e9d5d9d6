package agent

import (
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

// followers is the registry's event broadcaster: one event sequence per
// session, kept across its runs (a client orders and deduplicates a
// session's events by it), and the subscribers that follow each session.
// Its lock is never held with Registry.mu or a Live's, nor while a
// subscriber is called.
type followers struct {
	mu   sync.Mutex                         // guards seq and subs
	seq  map[string]int64                   // session -> seq of its last event
	subs map[string]map[Subscriber]struct{} // session -> its subscribers
}

// Seq numbers the next event of session.
func (g *Registry) Seq(session string) int64 {
	f := &g.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seq == nil {
		f.seq = map[string]int64{}
	}
	f.seq[session]++
	return f.seq[session]
}

// Follow makes s receive session's events (Publish) until its run ends
// (Ended) or s leaves (Forget).
func (g *Registry) Follow(session string, s Subscriber) {
	f := &g.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[string]map[Subscriber]struct{}{}
	}
	if f.subs[session] == nil {
		f.subs[session] = map[Subscriber]struct{}{}
	}
	f.subs[session][s] = struct{}{}
}

// Ended stops every subscriber of session: its run ended and its events
// were published.
func (g *Registry) Ended(session string) {
	f := &g.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, session)
}

// Forget drops s from every session: its connection closed.
func (g *Registry) Forget(s Subscriber) {
	f := &g.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	for session, subs := range f.subs {
		delete(subs, s)
		if len(subs) == 0 {
			delete(f.subs, session)
		}
	}
}

// Publish gives e, numbered already (Seq), to the subscribers of its
// session but from (the connection whose run made it, which has sent it
// itself).
func (g *Registry) Publish(e event.Event, from Subscriber) {
	f := &g.follow
	f.mu.Lock()
	var to []Subscriber
	for s := range f.subs[e.Session] {
		if s != from {
			to = append(to, s)
		}
	}
	f.mu.Unlock()
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
