package server

import (
	"slices"
	"sync"

	"go.lsp.dev/protocol"

	"github.com/agent-lsp/agent-lsp/agent/event"
)

// maxBacklog bounds the encoded notifications an outbox keeps for a
// connection that does not read them (but what it never drops).
const maxBacklog = 8 << 20

// outbox sends one connection its agent/event notifications and its runs'
// progress, from a goroutine of its own that runs while some wait: the
// events of its own runs and those of sessions it follows (runs of another
// window it queued a prompt into), in the order they came. A window slow to
// read, or not reading at all (a frozen or suspended editor), never holds a
// run, its own included: about maxBacklog bytes wait for it; past that,
// events are dropped, except a run's end, the beginning and end of its
// progress and flush marks. When the connection gets an event of a session
// again (or the queue drains), an events.dropped event stands for the
// events of that session it missed, so that the client reads the session
// again. Requests to the client (an edit, a question) are not queued here:
// they wait for the client's answer as before, after the events that led to
// them (flush).
type outbox struct {
	c    *client
	logf func(format string, args ...any)

	mu      sync.Mutex                      // guards the fields below
	queue   []outItem                       // not sent yet, oldest first
	size    int                             // bytes of the items queued or being sent
	idle    chan struct{}                   // closed when the queue is sent; nil while no goroutine sends it
	dropped map[string]*event.EventsDropped // by session: events dropped and not reported yet
	lost    int                             // items dropped since the last log line
}

// outItem is one thing to send: an encoded agent/event, a progress report,
// or a mark that is closed once everything queued before it is written.
type outItem struct {
	raw      []byte // an agent/event's params
	session  string
	seq      int64
	token    protocol.ProgressToken // with progress: the report's token
	progress protocol.LSPAny        // a $/progress value (progressBegin, progressReport, progressEnd)
	mark     chan struct{}
}

func (it outItem) size() int { return len(it.raw) + 64 }

func newOutbox(c *client, logf func(string, ...any)) *outbox {
	return &outbox{c: c, logf: logf}
}

// rawEvent queues an event encoded already (a followed session's).
func (o *outbox) rawEvent(raw []byte, session string, seq int64, keep bool) {
	o.put(outItem{raw: raw, session: session, seq: seq}, keep)
}

// progress queues a progress report on token; keep for its begin and end.
func (o *outbox) progress(token protocol.ProgressToken, value protocol.LSPAny, keep bool) {
	o.put(outItem{token: token, progress: value}, keep)
}

// mark returns a channel closed once everything queued before it is
// written (or dropped).
func (o *outbox) mark() <-chan struct{} {
	ch := make(chan struct{})
	o.put(outItem{mark: ch}, true)
	return ch
}

// put queues it, or drops it when the backlog is full and keep is not set.
func (o *outbox) put(it outItem, keep bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !keep && len(o.queue) > 0 && o.size+it.size() > maxBacklog {
		o.lost++
		if it.raw != nil {
			o.dropLocked(it.session, it.seq)
		}
		return
	}
	if it.raw != nil {
		o.reportLocked(it.session) // before this event: the client learns of the gap in order
	}
	o.appendLocked(it)
}

func (o *outbox) appendLocked(it outItem) {
	o.queue = append(o.queue, it)
	o.size += it.size()
	if o.idle == nil {
		o.idle = make(chan struct{})
		go o.send()
	}
}

// dropLocked counts a dropped event of session.
func (o *outbox) dropLocked(session string, seq int64) {
	if o.dropped == nil {
		o.dropped = map[string]*event.EventsDropped{}
	}
	d := o.dropped[session]
	if d == nil {
		d = &event.EventsDropped{FromSeq: seq}
		o.dropped[session] = d
	}
	d.Count++
	d.FromSeq, d.ToSeq = min(d.FromSeq, seq), max(d.ToSeq, seq)
}

// reportLocked queues session's events.dropped, if it has events dropped
// not reported yet.
func (o *outbox) reportLocked(session string) {
	d := o.dropped[session]
	if d == nil {
		return
	}
	delete(o.dropped, session)
	raw, err := event.Event{Session: session, Seq: d.ToSeq, Data: *d}.MarshalJSON()
	if err == nil {
		o.appendLocked(outItem{raw: raw, session: session, seq: d.ToSeq})
	}
}

// send writes the queue until it is empty and nothing dropped is left to
// report.
func (o *outbox) send() {
	for {
		o.mu.Lock()
		if len(o.queue) == 0 {
			sessions := make([]string, 0, len(o.dropped))
			for s := range o.dropped {
				sessions = append(sessions, s)
			}
			slices.Sort(sessions)
			for _, s := range sessions {
				o.reportLocked(s)
			}
		}
		batch, lost := o.queue, o.lost
		o.queue, o.lost = nil, 0
		if len(batch) == 0 {
			close(o.idle)
			o.idle = nil
		}
		o.mu.Unlock()
		if lost > 0 {
			o.logf("a window did not read what the server sent it: %d notifications dropped (its events.dropped events stand for the events)", lost)
		}
		if len(batch) == 0 {
			return
		}
		o.write(batch)
		sent := 0
		for _, it := range batch {
			sent += it.size()
		}
		o.mu.Lock()
		o.size -= sent
		o.mu.Unlock()
	}
}

// write sends batch in bursts (one write each), closing each mark once what
// came before it is written.
func (o *outbox) write(batch []outItem) {
	for len(batch) > 0 {
		i := slices.IndexFunc(batch, func(it outItem) bool { return it.mark != nil })
		if i < 0 {
			i = len(batch)
		}
		if i > 0 {
			o.c.burst(func() {
				for _, it := range batch[:i] {
					if it.progress != nil {
						o.c.progress(it.token, it.progress)
					} else {
						o.c.rawEvent(it.raw)
					}
				}
			})
		}
		if i < len(batch) {
			close(batch[i].mark)
			i++
		}
		batch = batch[i:]
	}
}
