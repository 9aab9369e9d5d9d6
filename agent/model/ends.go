package model

import (
	"context"
	"io"
	"sync"
	"time"
)

// endWait bounds how long the end of a body is read after its [DONE]; a
// server that has not ended the body by then loses the connection.
const endWait = 2 * time.Second

// maxEndBytes bounds what is read of a body after its [DONE].
const maxEndBytes = 4 << 10

// streamEnds reads the ends of finished streams on the side. After [DONE],
// an HTTP/1.1 body still has its last chunk to come, which servers send in a
// write of their own: reading it before the turn went on made each turn
// wait for one more packet. It is read meanwhile instead, so that the
// connection returns to the pool, and the next request waits until the
// latest end was read, so that it takes that connection rather than dialing
// another: never longer than the turn waited before (endWait at most).
// Each model waits for its own calls' ends only; concurrent calls of one
// model wait for each other's, which a server that ends its bodies at once
// makes a matter of microseconds.
type streamEnds struct {
	limit time.Duration // how long an end is read; 0: endWait

	mu   sync.Mutex    // guards last
	last chan struct{} // closed once the latest end was read; nil before any
}

// finish reads body to its end (at most maxEndBytes, for at most the limit)
// on the side, closes it, and then calls cancel, which ends the request's
// context.
func (e *streamEnds) finish(body io.ReadCloser, cancel context.CancelFunc) {
	limit := e.limit
	if limit <= 0 {
		limit = endWait
	}
	done := make(chan struct{})
	e.mu.Lock()
	e.last = done
	e.mu.Unlock()
	go func() {
		defer close(done)
		give := time.AfterFunc(limit, cancel) // ends the read: the connection closes
		io.Copy(io.Discard, io.LimitReader(body, maxEndBytes))
		give.Stop()
		body.Close()
		cancel()
	}()
}

// wait returns once the latest end was read, or when ctx ends.
func (e *streamEnds) wait(ctx context.Context) {
	e.mu.Lock()
	last := e.last
	e.mu.Unlock()
	if last == nil {
		return
	}
	select {
	case <-last:
	case <-ctx.Done():
	}
}
