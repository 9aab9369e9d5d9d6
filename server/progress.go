package server

import (
	"fmt"
	"strings"
	"time"

	"go.lsp.dev/protocol"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/transcript"
)

// Text deltas are batched into one agent/event every deltaWindow or deltaBytes.
const (
	deltaWindow = 30 * time.Millisecond
	deltaBytes  = 256
)

// reporter turns one run's events into agent/event notifications, which
// it numbers and publishes to the run's live session's subscribers (its
// own connection among them: each queues them in its outbox, never waiting
// for a client), and into $/progress reports for its own connection. One
// goroutine publishes them, in the order they came, and owns the batch of
// text deltas.
type reporter struct {
	c     *client
	hub   *Hub                   // numbers events per session and holds the live sessions
	token protocol.ProgressToken // the run's progress token; nil: no progress
	in    chan report
	done  chan struct{}
	// bound is the live session's broadcaster, which the connection
	// follows from the run's first event on: set by event, whose calls
	// come one at a time.
	bound *agent.Broadcast
	// to is bound, as the loop got it with the first event.
	to *agent.Broadcast
}

// report is one thing to send: an event, the end of progress, or a marker
// that is answered once everything queued before it was sent.
type report struct {
	ev      *event.Event
	to      *agent.Broadcast // where ev goes
	end     *string          // ends progress with this message
	flushed chan struct{}
}

// newReporter starts a reporter whose progress (on token, if any) begins with title.
func newReporter(c *client, hub *Hub, token protocol.ProgressToken, title string) *reporter {
	k := &reporter{c: c, hub: hub, token: token, in: make(chan report, 256), done: make(chan struct{})}
	k.progress(progressBegin(title), true)
	go k.loop()
	return k
}

// event queues one of the runtime's events (the agent's Events port). The
// first makes the connection follow the run's live session (registered
// while its run emits events): its events reach it as they reach any
// follower.
func (k *reporter) event(e event.Event) {
	if k.bound == nil {
		if k.bound = k.hub.Live().Follow(e.Session, k.c); k.bound == nil {
			k.bound = &agent.Broadcast{} // not a live session's event: for this connection only
			k.bound.Follow(k.c)
		}
	}
	k.in <- report{ev: &e, to: k.bound}
}

// flush returns once everything queued before it was written to the
// client (or dropped), buffered text included: a request to the editor (an
// edit, a question) then follows the events that led to it.
func (k *reporter) flush() {
	ch := make(chan struct{})
	k.in <- report{flushed: ch}
	<-ch
}

// close ends progress with msg (unless a run.end already did) and waits
// until everything was written: the run's result follows its events.
func (k *reporter) close(msg string) {
	k.in <- report{end: &msg}
	close(k.in)
	<-k.done
	if k.c.box != nil {
		select {
		case <-k.c.box.mark():
		case <-k.c.ctx.Done(): // the connection ended: nothing will be written
		}
	}
}

// progress queues a $/progress value (progressBegin, progressReport or
// progressEnd); keep (a begin or an end) says it is never dropped.
func (k *reporter) progress(value protocol.LSPAny, keep bool) {
	if k.token == nil {
		return
	}
	if k.c.box == nil {
		k.c.progress(k.token, value)
		return
	}
	k.c.box.progress(k.token, value, keep)
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
	var b batch
	for {
		select {
		case <-b.tick():
			b.timer = nil
			k.flushText(&b)
		case r, ok := <-k.in:
			if !ok {
				return
			}
			if !k.drain(&b, r) {
				return
			}
		}
	}
}

// drain handles r and whatever else is queued already, at most a queue's
// worth; it reports whether the queue is still open.
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
	if r.to != nil {
		k.to = r.to
	}
	switch {
	case r.flushed != nil:
		k.flushText(b)
		if k.c.box == nil {
			close(r.flushed)
			return
		}
		written := k.c.box.mark() // the waiter waits for the client, not the loop
		go func() {
			select {
			case <-written:
			case <-k.c.ctx.Done():
			}
			close(r.flushed)
		}()
	case r.end != nil:
		k.flushText(b)
		if !b.ended {
			k.progress(progressEnd(*r.end), true)
			b.ended = true
		}
	case r.ev.Type() == event.MessageDelta{}.Type():
		if r.ev.ContextID != "" {
			return // subagents' text stays in their own transcripts
		}
		if !b.answering {
			b.answering = true
			k.progress(progressReport("model is answering…"), false)
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
			k.progress(progressEnd(msg), true)
			b.ended = true
		} else if msg != "" {
			k.progress(progressReport(msg), false)
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

// send numbers an event in its session's sequence and publishes it to the
// run's subscribers (a run's end is never dropped).
func (k *reporter) send(e event.Event) {
	e.Seq = k.hub.Live().Seq(e.Session)
	k.to.Publish(e)
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
