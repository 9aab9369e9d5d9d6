package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// errStopped is the error of a call to a server of a closed Manager.
var errStopped = errors.New("the MCP servers are shut down")

// codeRejectedByTransport is the JSON-RPC error code the SDK gives a request
// its transport could not deliver (jsonrpc2.ErrRejected, internal to it).
const codeRejectedByTransport = -32005

// server is one definition's lifecycle. Its session is created by a start
// goroutine (start) and ended by a watch goroutine (watch) or by stop;
// callers only read it, under mu.
type server struct {
	m   *Manager
	def Definition // fixed

	mu       sync.Mutex // guards every field below
	state    State
	reason   string
	sess     *sdk.ClientSession // the running session, nil when not running
	calls    context.Context    // ended when sess is stopped: the calls on it end too
	endCalls context.CancelFunc // ends calls; set with sess
	watched  chan struct{}      // closed once watch has handled sess's end; set with sess
	gen      uint64             // counts start attempts and stops; callbacks of an older session are ignored
	starting chan struct{}      // closed when the start attempt under way ends; nil when none
	failures int                // failures in a row, for the backoff
	retryAt  time.Time          // a failed server does not start before
	starts   int                // sessions started
	closed   bool               // the Manager is closed: never start again
	tools    []*sdk.Tool        // the last listing of session gen
	listed   bool               // tools holds a listing of session gen
	listedAt uint64             // changes when tools was fetched
	changes  uint64             // tools/list_changed notifications of session gen
}

// session returns the running session, its generation and a context that
// ends when the session is stopped (its calls must end then: closing a
// session waits for them). A server not running is started after its
// backoff; a backoff longer than ctx allows fails at once with the last
// failure's reason. One call makes or shares one start attempt at most: if
// that fails, so does the call. It gives up when ctx ends.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, uint64, context.Context, <-chan struct{}, error) {
	attempted := false // a start this call made or waited for failed: do not try again
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, 0, nil, nil, errStopped
		}
		if s.sess != nil {
			sess, gen, calls, watched := s.sess, s.gen, s.calls, s.watched
			s.mu.Unlock()
			return sess, gen, calls, watched, nil
		}
		if ch := s.starting; ch != nil {
			s.mu.Unlock()
			attempted = true
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, 0, nil, nil, ctx.Err()
			}
		}
		if attempted && s.state == StateFailed {
			reason := s.reason
			s.mu.Unlock()
			return nil, 0, nil, nil, errors.New(reason)
		}
		if wait := time.Until(s.retryAt); wait > 0 {
			reason := s.reason
			s.mu.Unlock()
			if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
				return nil, 0, nil, nil, fmt.Errorf("failed (%s); next start in %s", reason, wait.Round(time.Millisecond))
			}
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
				continue
			case <-ctx.Done():
				timer.Stop()
				return nil, 0, nil, nil, ctx.Err()
			}
		}
		if s.m.isClosed() {
			s.closed = true
			s.mu.Unlock()
			return nil, 0, nil, nil, errStopped
		}
		ch := make(chan struct{})
		s.starting = ch
		s.state = StateStarting
		s.gen++
		gen := s.gen
		// Added under s.mu after checking closed: Close's stop of this server
		// takes s.mu after this, and waits for m.wg after that.
		s.m.wg.Add(1)
		s.mu.Unlock()
		go s.start(gen, ch)
		s.m.changed(s.def.Name)
	}
}

// start is the goroutine of one start attempt: it connects, then publishes
// the session (or the failure) and closes ch.
func (s *server) start(gen uint64, ch chan struct{}) {
	defer s.m.wg.Done()
	defer close(ch)
	ctx, cancel := context.WithTimeout(s.m.base, s.m.opts.StartTimeout)
	defer cancel()
	s.m.log(s.def.Name, "[mcp] starting "+s.def.Summary())
	sess, err := s.connect(ctx, gen)

	s.mu.Lock()
	if s.starting == ch {
		s.starting = nil
	}
	current := !s.closed && s.gen == gen // else stopped while starting
	if err == nil && !current {
		s.mu.Unlock()
		_ = sess.Close()
		return
	}
	if err != nil {
		reason := fmt.Sprintf("could not start: %v", err)
		if current {
			s.failLocked(reason)
		}
		s.mu.Unlock()
		s.m.log(s.def.Name, "[mcp] "+reason)
		s.m.changed(s.def.Name)
		return
	}
	watched := make(chan struct{})
	s.sess, s.watched = sess, watched
	s.calls, s.endCalls = context.WithCancel(s.m.base)
	s.state = StateRunning
	s.reason = ""
	s.starts++
	s.tools, s.listed, s.changes, s.listedAt = nil, false, 0, 0
	s.m.wg.Add(1)
	s.mu.Unlock()
	go s.watch(gen, sess, watched)
	s.m.log(s.def.Name, "[mcp] running")
	s.m.changed(s.def.Name)
}

// watch is the goroutine that waits for a session's end and, unless it was
// stopped on purpose, records the failure: the next call restarts the server.
func (s *server) watch(gen uint64, sess *sdk.ClientSession, watched chan struct{}) {
	defer s.m.wg.Done()
	defer close(watched)
	err := sess.Wait()
	s.mu.Lock()
	if s.gen != gen || s.sess != sess {
		s.mu.Unlock() // stopped on purpose
		return
	}
	s.sess = nil
	s.endCalls()
	reason := "the server exited"
	if err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		reason += ": " + err.Error()
	}
	s.failLocked(reason)
	retry := time.Until(s.retryAt).Round(time.Millisecond)
	s.mu.Unlock()
	_ = sess.Close() // reaps the process
	s.m.log(s.def.Name, fmt.Sprintf("[mcp] %s; it restarts at the next call, in %s at the earliest", reason, retry))
	s.m.changed(s.def.Name)
}

// failLocked records a failure and schedules the next start. s.mu is held.
func (s *server) failLocked(reason string) {
	s.state = StateFailed
	s.reason = reason
	s.failures++
	d := s.m.opts.Backoff
	for i := 1; i < s.failures && d < s.m.opts.MaxBackoff; i++ {
		d *= 2
	}
	s.retryAt = time.Now().Add(min(d, s.m.opts.MaxBackoff))
}

// healthy resets the backoff after a successful exchange.
func (s *server) healthy() {
	s.mu.Lock()
	s.failures = 0
	s.mu.Unlock()
}

// stop closes the running session, if any, and logs what goes wrong doing
// so. final (the Manager's Close) also prevents any further start.
func (s *server) stop(final bool) {
	s.mu.Lock()
	if final {
		s.closed = true
	}
	sess := s.sess
	s.sess = nil
	if sess != nil {
		s.endCalls() // closing the session waits for its calls
	}
	s.gen++ // the session's watcher and a start under way see they were stopped
	wasStopped := s.state == StateStopped
	s.state = StateStopped
	s.reason = ""
	s.retryAt = time.Time{}
	s.failures = 0
	s.starting = nil // a start under way closes its own session
	s.mu.Unlock()
	if sess == nil {
		if !wasStopped {
			s.m.changed(s.def.Name)
		}
		return
	}
	if err := sess.Close(); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		s.m.log(s.def.Name, fmt.Sprintf("[mcp] stopped: %v", err))
	} else {
		s.m.log(s.def.Name, "[mcp] stopped")
	}
	s.m.changed(s.def.Name)
}

// broken drops session gen after a call's error if that error says the
// transport failed (an http server gone): the next call starts a new
// session. A stdio server's exit is watch's to record, with its status.
func (s *server) broken(ctx context.Context, gen uint64, sess *sdk.ClientSession, err error) {
	var werr *jsonrpc.Error
	if ctx.Err() != nil || !errors.As(err, &werr) || werr.Code != codeRejectedByTransport {
		return
	}
	s.mu.Lock()
	if s.gen != gen || s.sess != sess {
		s.mu.Unlock()
		return
	}
	s.sess = nil
	s.endCalls()
	reason := fmt.Sprintf("the connection failed: %v", err)
	s.failLocked(reason)
	s.m.wg.Add(1)
	s.mu.Unlock()
	go func() { // closing may wait for the network
		defer s.m.wg.Done()
		_ = sess.Close()
	}()
	s.m.log(s.def.Name, "[mcp] "+reason)
	s.m.changed(s.def.Name)
}

// listChanged records a tools/list_changed of session gen (called by the SDK).
func (s *server) listChanged(gen uint64) {
	s.mu.Lock()
	current := s.gen == gen
	if current {
		s.changes++
	}
	s.mu.Unlock()
	if current {
		s.m.log(s.def.Name, "[mcp] tools/list_changed")
		s.m.changed(s.def.Name)
	}
}

// cachedTools returns the listing of session gen if it is still current.
func (s *server) cachedTools(gen uint64) ([]*sdk.Tool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || !s.listed || s.listedAt != s.changes {
		return nil, false
	}
	return append([]*sdk.Tool(nil), s.tools...), true
}

// changesSeen returns the list_changed count before a listing.
func (s *server) changesSeen() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changes
}

// storeTools keeps a listing of session gen fetched after changes
// notifications; one arriving meanwhile leaves it stale.
func (s *server) storeTools(gen, changes uint64, tools []*sdk.Tool) {
	s.mu.Lock()
	if s.gen == gen {
		s.tools, s.listed, s.listedAt = tools, true, changes
		s.failures = 0
	}
	s.mu.Unlock()
}

// status is a snapshot.
func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		Name:      s.def.Name,
		Source:    s.def.Source,
		Transport: s.def.Transport,
		State:     s.state,
		Reason:    s.reason,
		Tools:     -1,
		Starts:    s.starts,
	}
	if s.listed {
		st.Tools = len(s.tools)
	}
	if s.state == StateFailed {
		st.RetryAt = s.retryAt
	}
	return st
}
