package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Committer is a store's single writer, shared by its backends (bbolt,
// PostgreSQL): jobs queued while a commit is in flight are committed
// together by the next one (group commit), and writes are routed by
// durability (Sync waits; Batched waits only at a run's end, in groups of
// up to BatchSteps committed at most once per BatchWindow; Exit holds a
// run's steps in memory until it ends). W is a backend's unit of work: a
// function of its transaction, or of its batch of statements.
//
// Invariants: a batched writer waits while a full group is queued behind
// the commit in flight, so a crash loses at most two groups; after a
// batched job failed, the next write of any kind fails (its run must not go
// on as if it were stored); nothing is accepted after Close, which commits
// what is queued and held.
type Committer[W any] struct {
	durability  Durability
	window      time.Duration // batched commits come at most once per window
	commit      func([]W) (errs []error, commits int)
	join        func([]W) W
	noop        W
	batchedSeen atomic.Bool // some run chose Batched: gather groups
	commits     atomic.Int64

	mu       sync.Mutex // guards the fields below
	queue    []committerJob[W]
	waiters  int
	inflight int // jobs taken by the commit in progress
	// gathering is set while the writer waits for a batched group to fill:
	// then only what ends the wait (a waiter, a full group) wakes it.
	gathering bool
	closed    bool
	asyncErr  error           // first failure of a job nobody waited for
	held      map[heldKey][]W // Exit mode: steps of unfinished runs
	space     *sync.Cond      // signalled when the queue is taken

	wake    chan struct{}
	stopped chan struct{}

	lastCommit time.Time // when the last commit began; owned by loop
}

type committerJob[W any] struct {
	work W
	done chan error // nil: nobody waits
}

type heldKey struct{ thread, ns string }

// NewCommitter starts the writer of a store whose runs default to d.
// commit writes works in one transaction where it can and returns each
// one's error (in order) and how many transactions it committed; join
// makes one work of several (a run's held steps); noop does nothing.
func NewCommitter[W any](d Durability, commit func([]W) ([]error, int), join func([]W) W, noop W) *Committer[W] {
	return newCommitter(d, BatchWindow, commit, join, noop)
}

// newCommitter is NewCommitter with batched commits at most once per window.
func newCommitter[W any](d Durability, window time.Duration, commit func([]W) ([]error, int), join func([]W) W, noop W) *Committer[W] {
	c := &Committer[W]{durability: d, window: window, commit: commit, join: join, noop: noop,
		held: map[heldKey][]W{}, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	c.space = sync.NewCond(&c.mu)
	go c.loop()
	return c
}

// Commits returns how many write transactions the store has committed.
func (c *Committer[W]) Commits() int64 { return c.commits.Load() }

// Durability returns the durability of a write that chose d: d, or the
// store's default when d is "".
func (c *Committer[W]) Durability(d Durability) Durability {
	if d != "" {
		return d
	}
	return c.durability
}

// Submit queues w; with wait it returns once w is durable.
func (c *Committer[W]) Submit(w W, wait bool) error { return c.submit(w, wait, false) }

// submit is Submit; a barrier (Flush's) leaves an earlier batched failure to
// the next write, which fails with it.
func (c *Committer[W]) submit(w W, wait, barrier bool) error {
	var done chan error
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if err := c.asyncErr; err != nil && !barrier {
		c.asyncErr = nil
		c.mu.Unlock()
		return fmt.Errorf("an earlier batched write failed: %w", err)
	}
	if wait {
		done = make(chan error, 1)
		c.waiters++
	}
	for !wait && len(c.queue) >= BatchSteps && !c.closed {
		c.space.Wait()
	}
	if c.closed { // closed while this writer waited for room
		c.mu.Unlock()
		return ErrClosed
	}
	c.queue = append(c.queue, committerJob[W]{work: w, done: done})
	if wait || !c.gathering || len(c.queue) >= BatchSteps {
		select { // under the lock: Close closes wake under it too
		case c.wake <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
	if !wait {
		return nil
	}
	return <-done
}

// Write routes one write of thread's namespace ns by the run's durability
// d ("": the store's default); ends says the write ends the run (it is
// durable when Write returns).
func (c *Committer[W]) Write(d Durability, thread, ns string, w W, ends bool) error {
	switch c.Durability(d) {
	case Batched:
		c.batchedSeen.Store(true)
		return c.Submit(w, ends)
	case Exit:
		k := heldKey{thread, ns}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return ErrClosed
		}
		if !ends {
			c.held[k] = append(c.held[k], w)
			c.mu.Unlock()
			return nil
		}
		held := append(c.held[k], w)
		delete(c.held, k)
		c.mu.Unlock()
		return c.Submit(c.join(held), true)
	}
	return c.Submit(w, true)
}

// Flush returns once everything queued before it was committed, or failed.
// With nothing queued it returns at once, without a commit.
//
// Flush is a reader's barrier (Load, Sessions): a batched write that
// failed is left to the next write, which fails with it (its run must not
// go on as if its steps were stored). A reader that took the failure would
// hide it; one that kept failing on it would fail every read until a write
// came.
func (c *Committer[W]) Flush() error {
	c.mu.Lock()
	idle := len(c.queue) == 0 && c.inflight == 0
	c.mu.Unlock()
	if idle {
		return nil
	}
	return c.submit(c.noop, true, true)
}

// Close commits what is queued, and the held steps of unfinished runs in
// Exit mode, then stops the writer; it returns the failure of a batched
// write nobody was told of yet. Later writes fail with ErrClosed.
func (c *Committer[W]) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	for _, held := range c.held {
		for _, w := range held {
			c.queue = append(c.queue, committerJob[W]{work: w})
		}
	}
	c.held = nil
	c.closed = true
	c.space.Broadcast()
	close(c.wake)
	c.mu.Unlock()
	<-c.stopped
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.asyncErr
	c.asyncErr = nil
	return err
}

func (c *Committer[W]) loop() {
	defer close(c.stopped)
	for {
		_, open := <-c.wake
		if c.durability == Batched || c.batchedSeen.Load() {
			c.gather()
		}
		c.mu.Lock()
		jobs := c.queue
		c.queue = nil
		c.inflight = len(jobs)
		c.gathering = false
		closed := c.closed
		c.space.Broadcast()
		c.mu.Unlock()
		if len(jobs) > 0 {
			c.lastCommit = time.Now()
			c.run(jobs)
		}
		c.mu.Lock()
		c.inflight = 0
		rest := len(c.queue)
		c.mu.Unlock()
		if (closed || !open) && rest == 0 {
			return
		}
	}
}

// gather waits for a group to fill until the window after the last
// commit began, unless someone waits: a step after a quiet spell is
// committed at once, and steps that come faster share commits.
func (c *Committer[W]) gather() {
	wait := c.window - time.Since(c.lastCommit)
	if wait <= 0 {
		return
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		full := c.waiters > 0 || len(c.queue) >= BatchSteps || c.closed
		c.gathering = !full
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

// run commits jobs and answers each.
func (c *Committer[W]) run(jobs []committerJob[W]) {
	works := make([]W, len(jobs))
	for i, j := range jobs {
		works[i] = j.work
	}
	errs, n := c.commit(works)
	c.commits.Add(int64(n))
	for i, j := range jobs {
		var err error
		if i < len(errs) {
			err = errs[i]
		}
		c.reply(j, err)
	}
}

func (c *Committer[W]) reply(j committerJob[W], err error) {
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
