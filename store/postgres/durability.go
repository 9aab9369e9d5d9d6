package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agent-lsp/agent-lsp/store"
)

// The committer is store/durability.go's, with a pgx batch for a bbolt
// transaction: a job queues its statements, and a commit sends the jobs it
// took as one batch, which the server runs as one transaction (one round
// trip, one WAL flush).

type job struct {
	queue func(b *pgx.Batch)
	done  chan error // nil: nobody waits
}

type threadKey struct{ thread, ns string }

type committer struct {
	mu       sync.Mutex
	queue    []job
	waiters  int
	inflight int
	closed   bool
	asyncErr error                              // first failure of a job nobody waited for
	held     map[threadKey][]func(b *pgx.Batch) // exit mode: steps of unfinished runs
	space    *sync.Cond
	wake     chan struct{}
	stopped  chan struct{}
	commits  atomic.Int64
}

func (s *Store) startCommitter() {
	s.c = &committer{wake: make(chan struct{}, 1), stopped: make(chan struct{}), held: map[threadKey][]func(*pgx.Batch){}}
	s.c.space = sync.NewCond(&s.c.mu)
	go s.commitLoop()
}

// Commits returns how many write transactions the store has committed.
func (s *Store) Commits() int64 { return s.c.commits.Load() }

func (s *Store) durabilityOf(ctx context.Context) store.Durability {
	if d, ok := store.ContextDurability(ctx); ok {
		return d
	}
	return s.durability
}

// submit queues a job; with wait it returns once the job is committed.
func (s *Store) submit(queue func(*pgx.Batch), wait bool) error {
	c := s.c
	var done chan error
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return store.ErrClosed
	}
	if c.asyncErr != nil {
		// A step after a failed group commit fails: the run must not go on
		// as if its steps were being stored.
		err := c.asyncErr
		c.asyncErr = nil
		c.mu.Unlock()
		return fmt.Errorf("an earlier batched write failed: %w", err)
	}
	if wait {
		done = make(chan error, 1)
		c.waiters++
	}
	// Backpressure: with a full group queued behind the commit in flight, a
	// batched writer waits, so a crash never loses more than two groups.
	for !wait && len(c.queue) >= store.BatchSteps && !c.closed {
		c.space.Wait()
	}
	c.queue = append(c.queue, job{queue: queue, done: done})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if !wait {
		return nil
	}
	return <-done
}

// Flush returns once everything queued before it is committed. With
// nothing queued it returns at once.
func (s *Store) Flush() error {
	c := s.c
	c.mu.Lock()
	idle := len(c.queue) == 0 && c.inflight == 0 && c.asyncErr == nil
	c.mu.Unlock()
	if idle {
		return nil
	}
	return s.submit(func(*pgx.Batch) {}, true)
}

func (s *Store) commitLoop() {
	c := s.c
	defer close(c.stopped)
	for {
		_, open := <-c.wake
		if s.durability == store.Batched || s.batchedSeen.Load() {
			s.gather()
		}
		c.mu.Lock()
		jobs := c.queue
		c.queue = nil
		c.inflight = len(jobs)
		closed := c.closed
		c.space.Broadcast()
		c.mu.Unlock()
		if len(jobs) > 0 {
			s.commit(jobs)
		}
		c.mu.Lock()
		c.inflight = 0
		c.mu.Unlock()
		if closed || !open {
			c.mu.Lock()
			rest := len(c.queue)
			c.mu.Unlock()
			if rest == 0 {
				return
			}
		}
	}
}

// gather waits, up to BatchWindow, for a group to fill, unless someone waits.
func (s *Store) gather() {
	c := s.c
	deadline := time.NewTimer(store.BatchWindow)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		full := c.waiters > 0 || len(c.queue) >= store.BatchSteps || c.closed
		c.mu.Unlock()
		if full {
			return
		}
		select {
		case <-deadline.C:
			return
		case _, open := <-c.wake:
			if !open {
				return
			}
		}
	}
}

// send runs the statements that jobs queue as one transaction.
func (s *Store) send(jobs []job) error {
	b := &pgx.Batch{}
	for _, j := range jobs {
		j.queue(b)
	}
	if b.Len() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	err := s.pool.SendBatch(ctx, b).Close()
	s.c.commits.Add(1)
	if err != nil {
		return fmt.Errorf("commit to %s: %w", s.url, err)
	}
	return nil
}

// commit writes jobs in one transaction. If the server refused it (an
// error of one statement rolled it back), each job is committed on its own
// so one bad job does not fail the others. A failure whose outcome is
// unknown (the connection broke after the batch was sent) is not retried:
// appended items would be appended twice.
func (s *Store) commit(jobs []job) {
	err := s.send(jobs)
	if err != nil && pgconn.SafeToRetry(err) {
		err = s.send(jobs) // nothing reached the server: a new connection tries again
	}
	var pgErr *pgconn.PgError
	if err != nil && len(jobs) > 1 && errors.As(err, &pgErr) {
		for _, j := range jobs {
			s.reply(j, s.send([]job{j}))
		}
		return
	}
	for _, j := range jobs {
		s.reply(j, err)
	}
}

func (s *Store) reply(j job, err error) {
	c := s.c
	if j.done != nil {
		c.mu.Lock()
		c.waiters--
		c.mu.Unlock()
		j.done <- err
		return
	}
	if err != nil {
		c.mu.Lock()
		if c.asyncErr == nil {
			c.asyncErr = err
		}
		c.mu.Unlock()
	}
}

// write routes one thread write by durability: sync waits; batched waits
// only at a run's end; exit holds running steps in memory until the run ends.
func (s *Store) write(ctx context.Context, k threadKey, queue func(*pgx.Batch), ends bool) error {
	switch s.durabilityOf(ctx) {
	case store.Batched:
		s.batchedSeen.Store(true)
		return s.submit(queue, ends)
	case store.Exit:
		c := s.c
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return store.ErrClosed
		}
		if !ends {
			c.held[k] = append(c.held[k], queue)
			c.mu.Unlock()
			return nil
		}
		held := c.held[k]
		delete(c.held, k)
		c.mu.Unlock()
		return s.submit(func(b *pgx.Batch) {
			for _, h := range held {
				h(b)
			}
			queue(b)
		}, true)
	}
	return s.submit(queue, true)
}
