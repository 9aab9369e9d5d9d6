package store

import (
	"errors"
	"fmt"
	"runtime/debug"
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
	// Batched hands steps to a background writer that commits them in groups:
	// a step after a quiet spell at once, steps that come faster at most once
	// per BatchWindow, or every BatchSteps steps. A crash loses at most the
	// steps of the group being written and the one being gathered; a run's end
	// (a Status that Ended) is always durable when Put returns.
	Batched Durability = "batched"
	// Exit keeps a run's steps in memory and writes them once, when the run ends
	// (done, cancelled, failed or limit). A crash loses the unfinished run.
	Exit Durability = "exit"
)

// DefaultDurability is what Open uses unless told otherwise.
const DefaultDurability = Batched

// Batched mode's group bounds.
const (
	BatchWindow = 20 * time.Millisecond
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

// ErrClosed is returned for writes after Close.
var ErrClosed = errors.New("store is closed")

// boltWork is the bbolt store's unit of work for its Committer.
type boltWork = func(*bolt.Tx) error

func (b *Bolt) startCommitter() {
	b.c = NewCommitter(b.durability, func(w boltWork) (int, error) { return 1, b.update(w) },
		func(error) bool { return true }, // a failed bbolt transaction wrote nothing
		func(ws []boltWork) boltWork {
			if len(ws) == 1 {
				return ws[0]
			}
			return func(tx *bolt.Tx) error {
				for _, w := range ws {
					if err := w(tx); err != nil {
						return err
					}
				}
				return nil
			}
		}, func(*bolt.Tx) error { return nil })
}

// Commits returns how many write transactions the store has committed.
func (b *Bolt) Commits() int64 { return b.c.Commits() }

// submit queues apply; with wait it returns once apply is durable.
func (b *Bolt) submit(apply boltWork, wait bool) error { return b.c.Submit(apply, wait) }

// Flush returns once everything queued before it is durable. With nothing
// queued it returns at once, without a commit.
func (b *Bolt) Flush() error { return b.c.Flush() }

// write routes one thread write by durability (Committer.Write).
func (b *Bolt) write(d Durability, k threadKey, apply boltWork, ends bool) error {
	return b.c.Write(d, k.thread, k.ns, apply, ends)
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
