package store

import (
	"errors"
	"fmt"
	"strings"
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
// the commit in flight, so a crash loses at most two groups; nothing is
// accepted after Close, which commits what is queued and held.
//
// Whole steps: a thread's writes are committed in the order they were
// made, and never one after an earlier one of the same thread that
// failed. A group whose commit fails is committed again work by work in
// order, each thread up to its first failure (the works of a thread after
// it fail with that error, uncommitted); from then on the thread's writes
// fail with it, without being queued, until its run ends (a write that
// ends it is refused and ends the refusals) or a run starts from what is
// stored (Forget: the thread is loaded, or its first step is written). A failed job of no thread makes the next write of any kind
// fail instead (its run must not go on as if it were stored).
type Committer[W any] struct {
	durability  Durability
	window      time.Duration // batched commits come at most once per window
	commit      func(W) (commits int, err error)
	separable   func(error) bool
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
	asyncErr  error               // first failure of a job of no thread that nobody waited for
	failed    map[threadKey]error // threads whose write failed, with the first failure (see Whole steps)
	held      map[threadKey][]W   // Exit mode: steps of unfinished runs
	space     *sync.Cond          // signalled when the queue is taken

	wake    chan struct{}
	stopped chan struct{}

	lastCommit time.Time // when the last commit began; owned by loop
}

type committerJob[W any] struct {
	work   W
	thread *threadKey // the thread it writes, nil for none
	ends   bool       // it ends the thread's run
	done   chan error // nil: nobody waits
}

// NewCommitter starts the writer of a store whose runs default to d.
// commit writes one work in one transaction (all of it or nothing) and
// returns how many transactions it committed; separable says whether a
// group whose commit failed with err may be committed again work by work
// (not when its outcome is unknown); join makes one work of several, in
// order; noop does nothing.
func NewCommitter[W any](d Durability, commit func(W) (int, error), separable func(error) bool, join func([]W) W, noop W) *Committer[W] {
	return newCommitter(d, BatchWindow, commit, separable, join, noop)
}

// newCommitter is NewCommitter with batched commits at most once per window.
func newCommitter[W any](d Durability, window time.Duration, commit func(W) (int, error), separable func(error) bool, join func([]W) W, noop W) *Committer[W] {
	c := &Committer[W]{durability: d, window: window, commit: commit, separable: separable, join: join, noop: noop,
		failed: map[threadKey]error{}, held: map[threadKey][]W{}, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
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

// Submit queues w, a write of no thread; with wait it returns once w is
// durable.
func (c *Committer[W]) Submit(w W, wait bool) error {
	return c.submit(committerJob[W]{work: w}, wait, false)
}

// submit queues j; a barrier (Flush's) leaves an earlier failure to the
// next write, which fails with it.
func (c *Committer[W]) submit(j committerJob[W], wait, barrier bool) error {
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
	if err := c.refused(j); err != nil {
		c.mu.Unlock()
		return err
	}
	if wait {
		j.done = make(chan error, 1)
		c.waiters++
	}
	for !wait && len(c.queue) >= BatchSteps && !c.closed {
		c.space.Wait()
	}
	if c.closed { // closed while this writer waited for room
		c.mu.Unlock()
		return ErrClosed
	}
	c.queue = append(c.queue, j)
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
	return <-j.done
}

// refused returns the error a job of a thread whose write failed fails
// with (nil for any other job), and ends the refusals when the job ends
// its run. The caller holds mu.
func (c *Committer[W]) refused(j committerJob[W]) error {
	if j.thread == nil {
		return nil
	}
	err, ok := c.failed[*j.thread]
	if !ok {
		return nil
	}
	if j.ends {
		delete(c.failed, *j.thread)
	}
	return fmt.Errorf(refusal+"%w", err)
}

// Forget ends the refusals of the thread's writes after one failed: its
// state is being loaded from the store anew (a run that resumes it starts
// from what was stored).
func (c *Committer[W]) Forget(thread, ns string) {
	c.mu.Lock()
	delete(c.failed, threadKey{thread, ns})
	c.mu.Unlock()
}

// Write routes one write of thread's namespace ns by the run's durability
// d ("": the store's default); ends says the write ends the run (it is
// durable when Write returns). A write that is durable when it returns
// (Sync, a run's end) carries the thread's held steps (Exit mode) before it,
// in one transaction: a run in Exit mode that must make one write durable
// (an intent, a queued input) stores its steps so far with it.
func (c *Committer[W]) Write(d Durability, thread, ns string, w W, ends bool) error {
	k := threadKey{thread, ns}
	j := committerJob[W]{work: w, thread: &k, ends: ends}
	d = c.Durability(d)
	if d == Batched {
		c.batchedSeen.Store(true)
		if !ends {
			return c.submit(j, false, false)
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if err := c.refused(j); err != nil {
		c.mu.Unlock()
		return err
	}
	if d == Exit && !ends {
		c.held[k] = append(c.held[k], w)
		c.mu.Unlock()
		return nil
	}
	held := c.held[k]
	delete(c.held, k)
	c.mu.Unlock()
	if len(held) > 0 {
		j.work = c.join(append(held, w))
	}
	return c.submit(j, true, false)
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
	return c.submit(committerJob[W]{work: c.noop}, true, true)
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
	for k, held := range c.held {
		for _, w := range held {
			c.queue = append(c.queue, committerJob[W]{work: w, thread: &k})
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
	for _, ferr := range c.failed {
		if err == nil {
			err = ferr
		}
	}
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

// run commits jobs and answers each: in one transaction, else (when the
// backend says the failure allows it) work by work, each thread's up to
// its first failure. A job of a thread whose write failed earlier is not
// committed.
func (c *Committer[W]) run(jobs []committerJob[W]) {
	errs := make([]error, len(jobs))
	c.mu.Lock()
	var works []W
	live := make([]int, 0, len(jobs))
	for i, j := range jobs {
		if j.thread != nil && c.failed[*j.thread] != nil {
			errs[i] = c.refused(j)
			continue
		}
		works = append(works, j.work)
		live = append(live, i)
	}
	c.mu.Unlock()
	var err error
	if len(works) > 0 {
		var n int
		n, err = c.commit(c.join(works))
		c.commits.Add(int64(n))
	}
	if err != nil && len(live) > 1 && c.separable(err) {
		c.oneByOne(jobs, live, errs)
	} else {
		for _, i := range live {
			errs[i] = err
		}
	}
	for i, j := range jobs {
		c.reply(j, errs[i])
	}
}

// oneByOne commits the jobs at live one per transaction, in order; a job
// of a thread whose earlier job failed is not committed and fails with
// that job's error.
func (c *Committer[W]) oneByOne(jobs []committerJob[W], live []int, errs []error) {
	first := map[threadKey]error{}
	for _, i := range live {
		j := jobs[i]
		if j.thread != nil {
			if err, ok := first[*j.thread]; ok {
				errs[i] = fmt.Errorf(refusal+"%w", err)
				continue
			}
		}
		n, err := c.commit(j.work)
		c.commits.Add(int64(n))
		errs[i] = err
		if err != nil && j.thread != nil {
			first[*j.thread] = err
		}
	}
}

// reply answers j with err. A failed job of a thread makes the thread's
// later writes fail until its run ends; a failed job of no thread that
// nobody waits for makes the next write fail.
func (c *Committer[W]) reply(j committerJob[W], err error) {
	c.mu.Lock()
	switch {
	case err != nil && j.thread != nil && j.ends:
		delete(c.failed, *j.thread) // the run ended with it
	case err != nil && j.thread != nil:
		if c.failed[*j.thread] == nil {
			c.failed[*j.thread] = unwrapRefusal(err)
		}
	case err != nil && j.done == nil && c.asyncErr == nil:
		c.asyncErr = err
	}
	if j.done != nil {
		c.waiters--
	}
	c.mu.Unlock()
	if j.done != nil {
		j.done <- err
	}
}

// refusal prefixes the error of a write not made after an earlier one failed.
const refusal = "not written, as an earlier write of this run failed: "

// unwrapRefusal returns the failure a refusal wraps (err itself when it is
// not one), so that refusals do not nest.
func unwrapRefusal(err error) error {
	if strings.HasPrefix(err.Error(), refusal) {
		if inner := errors.Unwrap(err); inner != nil {
			return inner
		}
	}
	return err
}

// busy reports whether a commit is in progress (for tests).
func (c *Committer[W]) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight > 0
}
