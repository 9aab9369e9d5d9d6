// Package store persists agent sessions: checkpoints of graph runs, pending
// writes of interrupted steps, the per-channel item logs, and the session index.
//
// A checkpoint carries only what its step changed (last-value channels that were
// written, list operations, the tasks planned next), so writing one costs the
// same at message 20 as at message 20,000. Lists are materialized item by item,
// so loading the newest checkpoint replays no deltas at all.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agent-lsp/agent-lsp/store/internal/record"
)

// ErrNotFound is returned for an unknown session or checkpoint.
var ErrNotFound = errors.New("not found")

// ErrDamaged is wrapped by the error of a read that met a damaged record
// (its checksum fails, or it cannot be decoded) where the one asked for
// should be: a checkpoint's head, a session's record. Damage is never
// returned as data: records that are only part of what was asked for (a
// list's items, a value, a pending write) are left out instead, and the
// store names them through its warning path.
var ErrDamaged = record.ErrDamaged

// GapError is a checkpoint that does not follow its thread's stored one: an
// earlier step of its run was not stored (its write failed), so storing it
// would tear the thread's state. A backend refuses it.
type GapError struct {
	Step   int // the checkpoint's
	Stored int // the stored checkpoint's, -1 for none
}

func (e *GapError) Error() string {
	if e.Stored < 0 {
		return fmt.Sprintf("step %d of a thread with no stored step: an earlier step was not stored", e.Step)
	}
	return fmt.Sprintf("step %d does not follow the stored step %d: an earlier step was not stored", e.Step, e.Stored)
}

// ErrBusy is wrapped by the error of a shared store's lease on a session
// that another live process holds; the error names the holder.
var ErrBusy = errors.New("session is running elsewhere")

// Status is how a thread's newest checkpoint left its run. The graph kernel
// writes it (and aliases it), the store keeps it and the session index shows it.
type Status string

// Run statuses.
const (
	StatusRunning   Status = "running"
	StatusDone      Status = "done"
	StatusCancelled Status = "cancelled"
	StatusFailed    Status = "failed"
	StatusLimit     Status = "limit"
	// StatusInterrupted is never stored: the session index shows it for a
	// session stored as running that runs nowhere now (a crash or a kill
	// cut it off; it resumes).
	StatusInterrupted Status = "interrupted"
)

// Ended reports whether s ends a run: every status but StatusRunning and
// StatusInterrupted.
func (s Status) Ended() bool { return s != StatusRunning && s != StatusInterrupted }

// OpKind is the kind of one list operation.
type OpKind uint8

// List operation kinds.
const (
	// OpUpsert appends Body, or replaces the item with the same non-empty ID in place.
	OpUpsert OpKind = iota
	// OpRemove deletes the item with ID.
	OpRemove
	// OpReset deletes every item.
	OpReset
	// OpAppend appends Body as a new item. Its writer knows that no item
	// has its ID (the list it keeps says so), which spares the store a
	// lookup: the step that appends a message touches only the list's end.
	// An ID that is present after all leaves two items with it; a list
	// that loads them keeps the later body in the earlier's place.
	OpAppend
)

// Op is one operation on a list channel.
type Op struct {
	Kind OpKind          `json:"k"`
	ID   string          `json:"id,omitempty"`
	Body json.RawMessage `json:"b,omitempty"`
}

// Item is one element of a stored list.
type Item struct {
	ID   string
	Body json.RawMessage
}

// Task is a unit of work planned for the next step.
type Task struct {
	ID   string          `json:"id"`
	Node string          `json:"node"`
	Arg  json.RawMessage `json:"arg,omitempty"`
}

// Checkpoint is what one super-step changed, plus the control values needed to
// go on from it. Putting it applies the change atomically.
type Checkpoint struct {
	Thread    string
	Namespace string
	Step      int
	Status    Status
	// Values holds the new values of the last-value channels written in this step.
	Values map[string]json.RawMessage
	// Lists holds, per list channel, the operations of this step in order.
	Lists map[string][]Op
	// Next is the tasks planned for the following step; empty when the run ended.
	Next []Task
	// Index, when set, is upserted into the session index in the same transaction.
	Index *Session
	// Durability says when the write reaches the disk: the run's choice,
	// "" for the store's default.
	Durability Durability
}

// PendingWrite is the writes of a finished task (or an input queued for a
// running thread) of the step after the newest checkpoint.
type PendingWrite struct {
	Thread    string
	Namespace string
	Task      string // insert-if-absent under this ID
	Writes    json.RawMessage
	// Durability says when the write reaches the disk: the run's choice,
	// "" for the store's default.
	Durability Durability
}

// State is a thread's newest checkpoint, materialized.
type State struct {
	Step    int
	Status  Status
	Values  map[string]json.RawMessage
	Lists   map[string][]Item
	Next    []Task
	Pending map[string]json.RawMessage // task ID -> writes of a finished task of step Step+1
	Updated time.Time
}

// Session is one entry of the session index.
type Session struct {
	ID      string `json:"session"`
	Project string `json:"project"`
	Root    string `json:"root,omitempty"`  // the project's folder: a session continues only where it is open
	Model   string `json:"model,omitempty"` // the model of its last run: its next run's unless one is given
	// Edits is the edit mode a client last ran it in ("apply" or "review":
	// an ACP session's mode), so that a session loaded later continues in
	// it; "" when no client chose one.
	Edits string `json:"edits,omitempty"`
	// Mode is the mode (agent, plan, ask) a client last ran it in: its next
	// run's unless one is given; "" when none was chosen.
	Mode     string    `json:"mode,omitempty"`
	Title    string    `json:"title"`
	Status   Status    `json:"status"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Messages int       `json:"messages"`
}

// Checkpointer saves and loads graph checkpoints.
type Checkpointer interface {
	// Put applies cp atomically. Pending writes of earlier steps are dropped.
	Put(ctx context.Context, cp Checkpoint) error
	// PutWrite records the writes of a finished task of the step after the newest
	// checkpoint. It is insert-if-absent: a second write under one task ID is ignored.
	PutWrite(ctx context.Context, w PendingWrite) error
	// Load returns the newest checkpoint of (thread, namespace), or ErrNotFound.
	Load(ctx context.Context, thread, namespace string) (*State, error)
}

// Sessions is the session index.
type Sessions interface {
	PutSession(ctx context.Context, s Session) error
	// Session returns one session, or an error wrapping ErrNotFound.
	Session(ctx context.Context, id string) (Session, error)
	// Sessions lists sessions newest first; project "" lists all.
	Sessions(ctx context.Context, project string) ([]Session, error)
	// DeleteSession removes a session with all its threads' checkpoints; it
	// reports whether the session existed.
	DeleteSession(ctx context.Context, id string) (bool, error)
	// DeleteOlderThan removes the sessions last updated before t and returns how many.
	DeleteOlderThan(ctx context.Context, t time.Time) (int, error)
}

// Store is a complete persistence backend.
type Store interface {
	Checkpointer
	Sessions
	Approvals
	Leases
	// Name names the store for people: a file's path, a database's URL
	// without its password, "memory".
	Name() string
	Close() error
}

// Leases keeps a session from running in two processes at once. A store
// one process holds (a bbolt file, which that process has locked; the
// memory store) has nothing to keep apart, and its lease does nothing; a
// shared one (PostgreSQL) takes a lease that expires when its holder
// vanishes.
type Leases interface {
	// Acquire takes session's lease for this process, or fails with an
	// error wrapping ErrBusy that names its holder when another live one
	// has it. lost is called (once) when the lease is lost: another
	// process took it over, or it could not be renewed in time; the run it
	// guards must stop. release gives the lease back; calling it again does
	// nothing.
	Acquire(ctx context.Context, session string, ttl time.Duration, lost func()) (release func(), err error)
}

// noLease is the lease of a store one process holds: nothing to take.
func noLease() func() { return func() {} }

// Approvals remembers the user's answers about what a repository asks to
// run (its MCP servers), by key. They are not sessions: deleting or pruning
// sessions keeps them.
type Approvals interface {
	// Approval returns the value stored under key, "" when none is.
	Approval(ctx context.Context, key string) (string, error)
	// SetApproval stores value under key; "" deletes it. It is durable
	// when it returns.
	SetApproval(ctx context.Context, key, value string) error
}
