package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/transcript"
)

// followedWait bounds how long a run's events wait for the events another
// window's run left for the connection (a window that does not read them).
const followedWait = 2 * time.Second

// Text deltas are batched into one agent/event every deltaWindow or deltaBytes.
const (
	deltaWindow = 30 * time.Millisecond
	deltaBytes  = 256
)

// sequencer numbers agent/event notifications: one sequence per session.
type sequencer struct {
	mu   sync.Mutex       // guards last
	last map[string]int64 // session -> seq of its last event
}

func (q *sequencer) next(session string) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.last == nil {
		q.last = map[string]int64{}
	}
	q.last[session]++
	return q.last[session]
}

// reporter turns one run's events into agent/event notifications and
// $/progress reports. One goroutine sends them, in the order they came, and
// owns the batch of text deltas; no lock is held while it calls the client.
type reporter struct {
	c     *client
	hub   *Hub            // numbers events per session and passes them to the session's followers
	token json.RawMessage // the run's progress token; nil: no progress
	in    chan report
	done  chan struct{}
	// followed are the events of a burst the session's followers get once
	// it is written: a follower slow to read never holds this connection's
	// corked frames. Owned by the loop.
	followed []event.Event
}

// report is one thing to send: an event, the end of progress, or a marker
// that is answered once everything queued before it was sent.
type report struct {
	ev      *event.Event
	end     *string // ends progress with this message
	flushed chan struct{}
}

// newReporter starts a reporter whose progress (on token, if any) begins with title.
func newReporter(c *client, hub *Hub, token json.RawMessage, title string) *reporter {
	k := &reporter{c: c, hub: hub, token: token, in: make(chan report, 256), done: make(chan struct{})}
	k.progress(progressValue{Kind: "begin", Title: title, Cancellable: true})
	go k.loop()
	return k
}

// event queues one of the runtime's events (the agent's Events port).
func (k *reporter) event(e event.Event) { k.in <- report{ev: &e} }

// flush returns once everything queued before it was sent, buffered text
// included: a request to the editor (an edit, a question) then follows the
// events that led to it.
func (k *reporter) flush() {
	ch := make(chan struct{})
	k.in <- report{flushed: ch}
	<-ch
}

// close ends progress with msg (unless a run.end already did) and waits
// until everything was sent.
func (k *reporter) close(msg string) {
	k.in <- report{end: &msg}
	close(k.in)
	<-k.done
}

func (k *reporter) progress(v progressValue) {
	if k.token != nil {
		k.c.progress(k.token, v)
	}
}

// batch is the loop's state: the text deltas not sent yet and what progress said.
type batch struct {
	text      strings.Builder
	of        event.Event // the envelope of the buffered deltas
	timer     *time.Timer // sends the text deltaWindow after the first delta
	answering bool        // "model is answering…" was reported
	ended     bool        // progress ended
}

// tick is the batch timer's channel, nil when no text waits.
func (b *batch) tick() <-chan time.Time {
	if b.timer == nil {
		return nil
	}
	return b.timer.C
}

func (k *reporter) loop() {
	defer close(k.done)
	if k.hub != nil {
		// The events another window's run of a session left for this
		// connection go first: a prompt queued just as that run ended
		// starts this run, of the same session.
		k.hub.watchers.sent(k.c, followedWait)
	}
	var b batch
	for {
		select {
		case <-b.tick():
			b.timer = nil
			k.flushText(&b)
			k.follow()
		case r, ok := <-k.in:
			if !ok {
				return
			}
			open := true
			k.c.burst(func() { open = k.drain(&b, r) })
			k.follow()
			if !open {
				return
			}
		}
	}
}

// drain handles r and whatever else is queued already, at most a queue's
// worth, so that the client writes them at once; it reports whether the
// queue is still open.
func (k *reporter) drain(b *batch, r report) bool {
	k.handle(b, r)
	for range cap(k.in) {
		select {
		case r, ok := <-k.in:
			if !ok {
				return false
			}
			k.handle(b, r)
		default:
			return true
		}
	}
	return true
}

// handle sends one report, batching text deltas.
func (k *reporter) handle(b *batch, r report) {
	switch {
	case r.flushed != nil:
		k.flushText(b)
		close(r.flushed)
	case r.end != nil:
		k.flushText(b)
		if !b.ended {
			k.progress(progressValue{Kind: "end", Message: *r.end})
			b.ended = true
		}
	case r.ev.Type() == event.MessageDelta{}.Type():
		if r.ev.ContextID != "" {
			return // subagents' text stays in their own transcripts
		}
		if !b.answering {
			b.answering = true
			k.progress(progressValue{Kind: "report", Message: "model is answering…"})
		}
		b.of = *r.ev
		b.text.WriteString(r.ev.Data.(event.MessageDelta).Text)
		if b.text.Len() >= deltaBytes {
			k.flushText(b)
		} else if b.timer == nil {
			b.timer = time.NewTimer(deltaWindow)
		}
	default:
		k.flushText(b)
		b.answering = false
		k.send(*r.ev)
		if k.token == nil {
			return // no progress to report on
		}
		if msg, end := progressOf(*r.ev); end {
			k.progress(progressValue{Kind: "end", Message: msg})
			b.ended = true
		} else if msg != "" {
			k.progress(progressValue{Kind: "report", Message: msg})
		}
	}
}

// flushText sends the buffered text deltas as one event.
func (k *reporter) flushText(b *batch) {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if b.text.Len() > 0 {
		e := b.of
		e.Data = event.MessageDelta{Text: b.text.String()}
		k.send(e)
		b.text.Reset()
	}
}

// send numbers an event in its session's sequence and sends it; follow
// passes it to the connections following the session.
func (k *reporter) send(e event.Event) {
	e.Seq = k.hub.seqs.next(e.Session)
	k.c.event(e)
	k.followed = append(k.followed, e)
}

// follow passes the events sent since it last ran to the connections
// following their sessions.
func (k *reporter) follow() {
	for _, e := range k.followed {
		k.hub.watchers.send(e, k.c)
	}
	clear(k.followed)
	k.followed = k.followed[:0]
}

// progressOf is the progress line an event makes, if any, and whether it ends
// the run's progress.
func progressOf(e event.Event) (msg string, end bool) {
	switch d := e.Data.(type) {
	case event.ToolStart:
		return strings.TrimSpace(d.Name + " " + transcript.Target(d.Args)), false
	case event.SubagentStart:
		return "subagent started: " + transcript.FirstWords(d.Task, 8), false
	case event.SubagentEnd:
		return fmt.Sprintf("subagent %s: %s", e.ContextID, d.Status), false
	case event.Edit:
		if !d.Applied {
			return "edit refused: " + d.URI, false
		}
	case event.RunEnd:
		msg := "status: " + string(d.Status)
		if d.Error != "" {
			msg += " (" + transcript.FirstWords(d.Error, 20) + ")"
		}
		return msg, true
	}
	return "", false
}
