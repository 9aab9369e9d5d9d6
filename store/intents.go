package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/layout"
	"github.com/agent-lsp/agent-lsp/store/internal/record"
)

// IntentPrefix starts the pending-write key of an intent (State.Pending).
const IntentPrefix = "intent/"

// Intents is a Checkpointer that records intents: what a task of the step
// after a thread's newest checkpoint is about to do outside the store (edit
// a file, run a command), recorded before it does it, so that a run resumed
// after a crash settles the task instead of doing it again blindly. A
// Checkpointer without it (the memory store) keeps none.
type Intents interface {
	// PutIntent records body under key, replacing what key held. It is
	// durable when PutIntent returns, in every durability mode: in Exit
	// mode the run's steps so far are written with it (the run becomes
	// resumable). An intent is a pending write: Load returns it in Pending
	// under IntentPrefix+key, and the next checkpoint of another step
	// drops it.
	PutIntent(ctx context.Context, thread, ns, key string, body json.RawMessage) error
}

// Spools is a store that keeps files of a session beside it (the output of
// its commands, streamed as they run), deleted with the session.
type Spools interface {
	// SpoolDir returns the folder of session's files ("" for none).
	SpoolDir(session string) string
}

var (
	_ Intents = (*Bolt)(nil)
	_ Spools  = (*Bolt)(nil)
)

// PutIntent implements Intents.
func (b *Bolt) PutIntent(ctx context.Context, thread, ns, key string, body json.RawMessage) error {
	if b.readOnly {
		return fmt.Errorf("put intent %s/%s %s: %w", thread, ns, key, ErrReadOnly)
	}
	name := layout.ThreadBucket(thread, ns)
	apply := func(tx *bolt.Tx) error {
		n, err := nsBucket(tx, thread, ns, true)
		if err != nil {
			return err
		}
		k := layout.PendingKey(IntentPrefix + key)
		return n.Put(k, record.PackAs(b.strict, record.Place{Bucket: name, Key: k}, body))
	}
	if err := b.write(Sync, threadKey{thread, ns}, apply, false); err != nil {
		return fmt.Errorf("put intent %s/%s %s: %w", thread, ns, key, err)
	}
	return nil
}

// SpoolDir implements Spools: <store file>.spool/<session>, for a session
// whose ID is a plain name (letters, digits, - and _; "" for any other).
func (b *Bolt) SpoolDir(session string) string {
	if !plainName(session) {
		return ""
	}
	return filepath.Join(b.path+".spool", session)
}

// removeSpool deletes the files of session kept beside the store.
func (b *Bolt) removeSpool(session string) {
	if dir := b.SpoolDir(session); dir != "" {
		os.RemoveAll(dir)
	}
}

// plainName reports whether s is a non-empty name of letters, digits, - and _.
func plainName(s string) bool {
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return s != "" && len(s) <= 128
}
