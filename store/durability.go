package store

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Durability says when a checkpoint reaches the disk.
type Durability string

// Durability modes.
const (
	// Sync makes every step durable before Put returns. Concurrent Puts share
	// commits (group commit), so many sessions cost fewer fsyncs than steps.
	Sync Durability = "sync"
	// Batched hands steps to a background writer that commits them in groups,
	// every BatchWindow or BatchSteps steps, whichever comes first. A crash loses
	// at most the steps of the group being written and the one being gathered;
	// a run's end (a Status that Ended) is always durable when Put returns.
	Batched Durability = "batched"
	// Exit keeps a run's steps in memory and writes them once, when the run ends
	// (done, cancelled, failed or limit). A crash loses the unfinished run.
	Exit Durability = "exit"
)

// DefaultDurability is what Open uses unless told otherwise.
const DefaultDurability = Batched

// Batched mode's group bounds.
const (
	BatchWindow = 5 * time.Millisecond
	BatchSteps  = 64
)

// ParseDurability checks a durability name; "" means the default.
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(s); d {
	case "":
		return DefaultDurability, nil
	case Sync, Batched, Exit:
		return d, nil
	}
	return "", fmt.Errorf("unknown durability %q (sync, batched or exit)", s)
}

type durabilityKey struct{}

// WithDurability returns a context whose checkpoint writes use d, overriding
// the store's default for one run.
func WithDurability(ctx context.Context, d Durability) context.Context {
	return context.WithValue(ctx, durabilityKey{}, d)
}

// ContextDurability returns the durability WithDurability put in ctx, if
// any: another backend's writes honour it as Bolt's do.
func ContextDurability(ctx context.Context) (Durability, bool) {
	d, ok := ctx.Value(durabilityKey{}).(Durability)
	return d, ok && d != ""
}

func (b *Bolt) durabilityOf(ctx context.Context) Durability {
	if d, ok := ContextDurability(ctx); ok {
		return d
	}
	return b.durability
}

// ErrClosed is returned for writes after Close.
var ErrClosed = errors.New("store is closed")

type job struct {
	apply func(tx *bolt.Tx) error
	done  chan error // nil: nobody waits
}

// committer is the single writer: jobs queued while a commit is in flight
// are committed together by the next one.
type committer struct {
	mu       sync.Mutex
	queue    []job
	waiters  int
	inflight int // jobs taken by the commit in progress
	closed   bool
	asyncErr error                                // first failure of a job nobody waited for
	held     map[threadKey][]func(*bolt.Tx) error // Exit mode: steps of unfinished runs
	space    *sync.Cond                           // signalled when the queue is taken
	wake     chan struct{}
	stopped  chan struct{}
	commits  atomic.Int64
}

func (b *Bolt) startCommitter() {
	b.c = &committer{wake: make(chan struct{}, 1), stopped: make(chan struct{}), held: map[threadKey][]func(*bolt.Tx) error{}}
	b.c.space = sync.NewCond(&b.c.mu)
	go b.commitLoop()
}

// Commits returns how many write transactions the store has committed.
func (b *Bolt) Commits() int64 { return b.c.commits.Load() }

// submit queues apply; with wait it returns once apply is durable.
func (b *Bolt) submit(apply func(*bolt.Tx) error, wait bool) error {
	c := b.c
	var done chan error
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if wait {
		done = make(chan error, 1)
		c.waiters++
		if err := c.asyncErr; err != nil {
			c.asyncErr = nil
			c.waiters--
			c.mu.Unlock()
			return fmt.Errorf("an earlier batched write failed: %w", err)
		}
	}
	// A batched step after a failed group commit fails: the run must not go
	// on as if its steps were being stored.
	if !wait && c.asyncErr != nil {
		err := c.asyncErr
		c.asyncErr = nil
		c.mu.Unlock()
		return fmt.Errorf("an earlier batched write failed: %w", err)
	}
	// Backpressure: with a full group already queued behind the commit in
	// flight, a batched writer waits, so a crash never loses more than two groups.
	for !wait && len(c.queue) >= BatchSteps && !c.closed {
		c.space.Wait()
	}
	c.queue = append(c.queue, job{apply: apply, done: done})
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

// Flush returns once everything queued before it is durable. With nothing
// queued it returns at once, without a commit.
func (b *Bolt) Flush() error {
	c := b.c
	c.mu.Lock()
	idle := len(c.queue) == 0 && c.inflight == 0 && c.asyncErr == nil
	c.mu.Unlock()
	if idle {
		return nil
	}
	return b.submit(func(*bolt.Tx) error { return nil }, true)
}

func (b *Bolt) commitLoop() {
	c := b.c
	defer close(c.stopped)
	for {
		_, open := <-c.wake
		if b.durability == Batched || b.batchedSeen.Load() {
			b.gather()
		}
		c.mu.Lock()
		jobs := c.queue
		c.queue = nil
		c.inflight = len(jobs)
		closed := c.closed
		c.space.Broadcast()
		c.mu.Unlock()
		if len(jobs) > 0 {
			b.commit(jobs)
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

// gather waits, up to BatchWindow, for a batch to fill, unless someone waits.
func (b *Bolt) gather() {
	c := b.c
	deadline := time.NewTimer(BatchWindow)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		full := c.waiters > 0 || len(c.queue) >= BatchSteps || c.closed
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

// update runs a write transaction, turning a bbolt panic on a damaged page
// into an error (the committer goroutine must never die).
func (b *Bolt) update(fn func(tx *bolt.Tx) error) (err error) {
	b.swap.RLock()
	defer b.swap.RUnlock()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see view
	defer guard(b.path, &err)
	return b.db.Update(fn)
}

// commit writes jobs in one transaction; if it fails, each job on its own, so
// one bad job does not fail the others.
func (b *Bolt) commit(jobs []job) {
	c := b.c
	err := b.update(func(tx *bolt.Tx) error {
		for _, j := range jobs {
			if err := j.apply(tx); err != nil {
				return err
			}
		}
		return nil
	})
	c.commits.Add(1)
	if err != nil && len(jobs) > 1 {
		for _, j := range jobs {
			b.reply(j, b.update(j.apply))
			c.commits.Add(1)
		}
		return
	}
	for _, j := range jobs {
		b.reply(j, err)
	}
}

func (b *Bolt) reply(j job, err error) {
	c := b.c
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

// write routes one thread write by durability: Sync waits; Batched waits only
// at a run's end; Exit holds running steps in memory until the run ends.
func (b *Bolt) write(ctx context.Context, k threadKey, apply func(*bolt.Tx) error, ends bool) error {
	switch b.durabilityOf(ctx) {
	case Batched:
		b.batchedSeen.Store(true)
		return b.submit(apply, ends)
	case Exit:
		c := b.c
		c.mu.Lock()
		if !ends {
			c.held[k] = append(c.held[k], apply)
			c.mu.Unlock()
			return nil
		}
		held := c.held[k]
		delete(c.held, k)
		c.mu.Unlock()
		return b.submit(func(tx *bolt.Tx) error {
			for _, h := range held {
				if err := h(tx); err != nil {
					return err
				}
			}
			return apply(tx)
		}, true)
	}
	return b.submit(apply, true)
}
