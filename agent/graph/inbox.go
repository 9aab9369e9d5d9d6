package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/store"
)

// ErrNotRunning is returned by Queue when the thread has no invocation in
// progress (or its invocation has just planned its end): the caller starts a
// new one instead.
var ErrNotRunning = errors.New("the thread has no run in progress")

// inputPrefix starts the pending-write key of a queued input; the rest sorts
// in queue order across restarts.
const inputPrefix = "input/"

// queued is one input waiting for a step boundary.
type queued struct {
	id    string // the caller's ID of the input
	key   string // its pending-write key
	patch Patch  // what it writes
	raw   []byte // patch encoded, as stored
	order int64  // queue order
}

// inbox holds a running invocation's queued inputs. Its lock is held across
// the barrier's checkpoint, so an input is stored either with the checkpoint
// that applies it or as a pending write of the step after that checkpoint:
// a crash at any point keeps it exactly once.
type inbox struct {
	mu     sync.Mutex // guards items, closed and last
	items  []queued
	closed bool  // the invocation has planned its end: Queue fails with ErrNotRunning
	last   int64 // the newest order handed out
}

// threadKey names a running invocation in a Graph's registry.
type threadKey struct{ thread, namespace string }

// register makes r the running invocation of its thread; an invocation
// already running there is an error (a caller runs one at a time).
func (g *Graph) register(r *runner) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := threadKey{r.cfg.Thread, r.cfg.Namespace}
	if _, busy := g.live[k]; busy {
		return fmt.Errorf("thread %s/%s already has a run in progress", k.thread, k.namespace)
	}
	g.live[k] = r
	return nil
}

func (g *Graph) unregister(r *runner) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := threadKey{r.cfg.Thread, r.cfg.Namespace}
	if g.live[k] == r {
		delete(g.live, k)
	}
}

// Queue gives input to the invocation running on cfg's thread and
// namespace. The input is stored at once (synchronously, whatever the run's
// durability) as a pending write, and applied at the first step boundary
// whose state cfg.Accepts (after the writes of that step), in queue order;
// when the run would otherwise end, it goes on from Start instead. A run that
// ends another way (cancelled, failed, limit) returns the inputs it did not
// apply in Result.Queued. After a crash, Resume applies the stored inputs.
// id names the input in events and in Result.Queued; position is its place
// in the queue, from 1.
func (g *Graph) Queue(ctx context.Context, cfg Config, id string, input Patch) (position int, err error) {
	g.mu.Lock()
	r := g.live[threadKey{cfg.Thread, cfg.Namespace}]
	g.mu.Unlock()
	if r == nil {
		return 0, ErrNotRunning
	}
	raw, err := g.schema.encodePatch(input)
	if err != nil {
		return 0, fmt.Errorf("queue input %s: %w", id, err)
	}
	r.inbox.mu.Lock()
	defer r.inbox.mu.Unlock()
	if r.inbox.closed {
		return 0, ErrNotRunning
	}
	order := max(time.Now().UnixNano(), r.inbox.last+1)
	q := queued{id: id, key: fmt.Sprintf("%s%020d/%s", inputPrefix, order, id), patch: input, raw: raw, order: order}
	if err := r.storeInput(ctx, q); err != nil {
		return 0, err
	}
	r.inbox.last = order
	r.inbox.items = append(r.inbox.items, q)
	return len(r.inbox.items), nil
}

// storeInput writes a queued input as a pending write of the step after the
// newest checkpoint, synchronously. The caller holds r.inbox.mu.
func (r *runner) storeInput(ctx context.Context, q queued) error {
	if r.cfg.Checkpointer == nil {
		return nil
	}
	w := store.PendingWrite{Thread: r.cfg.Thread, Namespace: r.cfg.Namespace, Task: q.key, Writes: q.raw, Durability: store.Sync}
	if err := r.cfg.Checkpointer.PutWrite(context.WithoutCancel(ctx), w); err != nil {
		return fmt.Errorf("queue input %s: %w", q.id, err)
	}
	return nil
}

// restoreInputs loads the inputs a crashed invocation had stored.
func (r *runner) restoreInputs(pending map[string]json.RawMessage) error {
	var keys []string
	for k := range pending {
		if strings.HasPrefix(k, inputPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p, err := r.g.schema.decodePatch(pending[k])
		if err != nil {
			return fmt.Errorf("queued input %s: %w", k, err)
		}
		rest := strings.TrimPrefix(k, inputPrefix)
		var order int64
		fmt.Sscan(rest[:min(20, len(rest))], &order)
		id := rest[min(21, len(rest)):]
		r.inbox.items = append(r.inbox.items, queued{id: id, key: k, patch: p, raw: pending[k], order: order})
		r.inbox.last = max(r.inbox.last, order)
	}
	return nil
}

// take removes the queued inputs if state s accepts them. The caller holds
// r.inbox.mu.
func (r *runner) take(s State) []queued {
	if len(r.inbox.items) == 0 || (r.cfg.Accepts != nil && !r.cfg.Accepts(s)) {
		return nil
	}
	taken := r.inbox.items
	r.inbox.items = nil
	return taken
}

// restore stores again the inputs still queued after a checkpoint dropped the
// pending writes of its step. The caller holds r.inbox.mu.
func (r *runner) restore(ctx context.Context) error {
	for _, q := range r.inbox.items {
		if err := r.storeInput(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// close ends the inbox and returns the IDs of the inputs never applied.
func (r *runner) close() []string {
	r.inbox.mu.Lock()
	defer r.inbox.mu.Unlock()
	r.inbox.closed = true
	var ids []string
	for _, q := range r.inbox.items {
		ids = append(ids, q.id)
	}
	r.inbox.items = nil
	return ids
}
