package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// LockTimeout is how long Open waits for another process to release the store file.
const LockTimeout = time.Second

// ErrLocked is returned by Open when another process holds the store file.
var ErrLocked = errors.New("store is in use by another agent-lsp process")

var (
	// bApprovals holds the user's approvals of what repositories ask to run.
	bApprovals = []byte("approvals")
	// bMeta holds the store's own records: kFormat, its format version.
	bMeta   = []byte("meta")
	kFormat = []byte("format")
)

// Format is the store format this binary writes. 2 compressed records
// (codec.go); 3 keeps each thread's namespace in one bucket (layout.go). A
// file without a format record is of format 1 (records raw). Open converts
// files of formats 1 and 2 to 3 (migrate.go) and refuses newer ones.
const Format = 3

// ErrNewerFormat is returned by Open for a store written by a newer
// agent-lsp, whose records this binary may not read.
var ErrNewerFormat = errors.New("the store was written by a newer agent-lsp: upgrade agent-lsp")

// Bolt is a Store in one bbolt file.
//
// bbolt holds an exclusive file lock, so one file serves one process at a time: a
// second process's Open fails with ErrLocked after LockTimeout instead of hanging.
type Bolt struct {
	// swap guards db: every transaction holds it for reading, Compact for
	// writing while it replaces the file.
	swap       sync.RWMutex
	db         *bolt.DB
	path       string
	now        func() time.Time
	durability Durability
	warn       func(string) // reports records skipped while reading
	recovered  string       // what Open did with a damaged file, "" if nothing
	c          *Committer[boltWork]
	closeOnce  sync.Once
	closeErr   error
}

// Option configures Open.
type Option func(*Bolt)

// WithDefaultDurability sets the durability of runs that do not choose one.
func WithDefaultDurability(d Durability) Option { return func(b *Bolt) { b.durability = d } }

// WithWarn reports problems that do not stop the store, such as a record
// that cannot be read and is skipped.
func WithWarn(warn func(string)) Option { return func(b *Bolt) { b.warn = warn } }

// Open opens or creates the store file at path, creating its directory. A
// file bbolt cannot read is moved aside as <path>.corrupt-<time> and a fresh
// store is created in its place; Recovered then says so.
func Open(path string, opts ...Option) (*Bolt, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := openBolt(path)
	converted := 0
	var skipped []string // what a conversion left out, told once the options are set
	skip := func(m string) { skipped = append(skipped, m) }
	if err == nil {
		if converted, err = initBuckets(db, path, skip); err != nil {
			db.Close()
			db = nil
		}
	}
	recovered := ""
	var corrupt *CorruptError
	if errors.As(err, &corrupt) {
		aside, merr := moveAside(path, time.Now())
		if merr != nil {
			return nil, fmt.Errorf("open store: %w; moving it aside failed: %v", err, merr)
		}
		recovered = fmt.Sprintf("%v; it was moved to %s and a new, empty store is used", err, aside)
		db, err = openBolt(path)
	}
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w (waited %s)", path, ErrLocked, LockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	n, err := initBuckets(db, path, skip)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	b := &Bolt{db: db, path: path, now: time.Now, durability: DefaultDurability, warn: func(string) {}, recovered: recovered}
	for _, o := range opts {
		o(b)
	}
	b.startCommitter()
	for _, m := range skipped {
		b.warn("converting the store: " + m)
	}
	if converted+n > 0 {
		// The old layout's pages are all free now: give them back.
		if _, _, err := b.Compact(context.Background()); err != nil {
			b.warn(fmt.Sprintf("the store was converted to format %d but not compacted (%v); `agent-lsp sessions compact` retries", Format, err))
		}
	}
	return b, nil
}

// initBuckets creates the top-level buckets, checks the file's format, and
// converts a file of an earlier layout (migrate), returning how many
// sessions it converted and describing to skip the records it left out; a
// damaged file makes it return a CorruptError rather than panic.
func initBuckets(db *bolt.DB, path string, skip func(string)) (converted int, err error) {
	defer guard(path, &err)
	legacy := false
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bApprovals, bMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bMeta)
		if v := meta.Get(kFormat); len(v) == 8 {
			if f := binary.BigEndian.Uint64(v); f > Format {
				return fmt.Errorf("%w (store format %d; this agent-lsp reads formats up to %d)", ErrNewerFormat, f, Format)
			}
		}
		legacy = tx.Bucket(legacySessions) != nil || tx.Bucket(legacyThreads) != nil
		// Written first: a binary of format 2 refuses a file that is
		// being converted, rather than read half of its sessions.
		return meta.Put(kFormat, u64(Format))
	})
	if err != nil || !legacy {
		return 0, err
	}
	return migrate(db, migrateTxBytes, skip)
}

// Sizes returns the bytes the store's data takes in its file (its pages in
// use: the file's high-water mark less its free pages) and the file's size
// (bbolt grows the file ahead of use, and never shrinks it: Compact does).
func (b *Bolt) Sizes() (used, file int64, err error) {
	if err := b.Flush(); err != nil {
		return 0, 0, err
	}
	err = b.view(func(tx *bolt.Tx) error {
		used = tx.Size() - int64(tx.DB().Stats().FreeAlloc)
		return nil
	})
	if fi, serr := os.Stat(b.path); serr == nil {
		file = fi.Size()
	}
	return used, file, err
}

// Path returns the store file's path.
func (b *Bolt) Path() string { return b.path }

// Recovered says what Open did with a damaged store file ("" when nothing):
// the user should be told.
func (b *Bolt) Recovered() string { return b.recovered }

// view runs a read transaction, turning a bbolt panic on a damaged page into
// an error.
func (b *Bolt) view(fn func(tx *bolt.Tx) error) (err error) {
	b.swap.RLock()
	defer b.swap.RUnlock()
	// bbolt reads pages through its memory map on this goroutine: a page
	// the file no longer has (cut short, a bad block) must fail this call,
	// not fault the process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer guard(b.path, &err)
	return b.db.View(fn)
}

// Close writes what is queued (and the held steps of unfinished runs in Exit
// mode), then closes the file.
func (b *Bolt) Close() error {
	b.closeOnce.Do(func() {
		b.c.Close() // a failed batched write was reported to the run's next write
		b.swap.Lock()
		defer b.swap.Unlock()
		b.closeErr = b.db.Close()
	})
	return b.closeErr
}

type head struct {
	Step    int       `json:"step"`
	Status  Status    `json:"status"`
	Next    []Task    `json:"next,omitempty"`
	Updated time.Time `json:"updated"`
}

// headStep returns the step of an encoded head, all of the old head that a
// step needs (the new head replaces the rest). The head's encoding begins
// with it (json.Marshal writes the fields in order), so its digits are read
// from there; any other text is decoded in full.
func headStep(raw []byte) (int, error) {
	if rest, ok := bytes.CutPrefix(raw, []byte(`{"step":`)); ok {
		n := 0
		for n < len(rest) && n < 18 && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 && n < len(rest) && (rest[n] == ',' || rest[n] == '}') && (rest[0] != '0' || n == 1) {
			if step, err := strconv.Atoi(string(rest[:n])); err == nil {
				return step, nil
			}
		}
	}
	var h struct {
		Step int `json:"step"`
	}
	err := json.Unmarshal(raw, &h)
	return h.Step, err
}

// nsBucket returns the bucket of (thread, ns), creating it when create is
// set (nil when it does not exist and create is not).
func nsBucket(tx *bolt.Tx, thread, ns string, create bool) (*bolt.Bucket, error) {
	name := threadBucket(thread, ns)
	if !create {
		return tx.Bucket(name), nil
	}
	n, err := tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, err
	}
	n.FillPercent = appendFill
	return n, nil
}

func (b *Bolt) putTx(tx *bolt.Tx, cp Checkpoint) error {
	n, err := nsBucket(tx, cp.Thread, cp.Namespace, true)
	if err != nil {
		return err
	}
	oldHead, session, err := splitHead(n.Get(keyHead))
	if err != nil {
		return err
	}
	if len(oldHead) > 0 {
		oldStep, err := headStep(oldHead)
		if err != nil {
			return fmt.Errorf("corrupt checkpoint head: %w", err)
		}
		if cp.Step > oldStep+1 {
			return &GapError{Step: cp.Step, Stored: oldStep}
		}
		if oldStep != cp.Step {
			if err := deletePrefix(n, []byte{kPending}); err != nil {
				return err
			}
		}
	}
	for name, ops := range cp.Lists {
		if err := applyOps(n, name, ops); err != nil {
			return fmt.Errorf("list %s: %w", name, err)
		}
	}
	for k, v := range cp.Values {
		if err := n.Put(valueKey(k), records().pack(v)); err != nil {
			return err
		}
	}
	h, err := json.Marshal(head{Step: cp.Step, Status: cp.Status, Next: cp.Next, Updated: b.now()})
	if err != nil {
		return err
	}
	if idx := cp.Index; idx != nil && idx.ID == cp.Thread && cp.Namespace == "" {
		// The session record shares the head's record (layout.go).
		if session, err = json.Marshal(idx); err != nil {
			return err
		}
	} else if idx != nil {
		if err := putSession(tx, *idx); err != nil {
			return err
		}
	}
	return n.Put(keyHead, encodeHead(h, session))
}

// checkLists refuses list names the layout cannot keep apart.
func checkLists(lists map[string][]Op) error {
	for name := range lists {
		if strings.IndexByte(name, 0) >= 0 {
			return fmt.Errorf("list name %q holds a zero byte", name)
		}
	}
	return nil
}

// Put implements Checkpointer. When it returns, the checkpoint is durable in
// Sync mode, and in every mode when it ends a run (a status that Ended).
func (b *Bolt) Put(ctx context.Context, cp Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkLists(cp.Lists); err != nil {
		return fmt.Errorf("put checkpoint %s/%s step %d: %w", cp.Thread, cp.Namespace, cp.Step, err)
	}
	if cp.Step == 0 {
		b.c.Forget(cp.Thread, cp.Namespace) // a new run of a thread never stored
	}
	apply := func(tx *bolt.Tx) error { return b.putTx(tx, cp) }
	if err := b.write(ctx, threadKey{cp.Thread, cp.Namespace}, apply, cp.Status.Ended()); err != nil {
		return fmt.Errorf("put checkpoint %s/%s step %d: %w", cp.Thread, cp.Namespace, cp.Step, err)
	}
	return nil
}

// PutWrite implements Checkpointer.
func (b *Bolt) PutWrite(ctx context.Context, thread, ns, taskID string, w json.RawMessage) error {
	apply := func(tx *bolt.Tx) error {
		n, err := nsBucket(tx, thread, ns, true)
		if err != nil {
			return err
		}
		k := pendingKey(taskID)
		if n.Get(k) != nil {
			return nil
		}
		return n.Put(k, records().pack(w))
	}
	if err := b.write(ctx, threadKey{thread, ns}, apply, false); err != nil {
		return fmt.Errorf("put pending write %s/%s %s: %w", thread, ns, taskID, err)
	}
	return nil
}

// Load implements Checkpointer. A run that loads a stored thread starts
// from what is stored: the refusal of the thread's writes after one failed
// ends (Committer.Forget), and the store refuses a step that does not
// follow the stored one (GapError).
func (b *Bolt) Load(ctx context.Context, thread, ns string) (*State, error) {
	if err := b.Flush(); err != nil {
		return nil, fmt.Errorf("load checkpoint %s/%s: %w", thread, ns, err)
	}
	var s *State
	err := b.view(func(tx *bolt.Tx) error {
		n, _ := nsBucket(tx, thread, ns, false)
		if n == nil {
			return ErrNotFound
		}
		raw, _, err := splitHead(n.Get(keyHead))
		if err != nil {
			return err
		}
		if len(raw) == 0 {
			return ErrNotFound
		}
		var h head
		if err := json.Unmarshal(raw, &h); err != nil {
			return fmt.Errorf("corrupt checkpoint head: %w", err)
		}
		s = &State{Step: h.Step, Status: h.Status, Next: h.Next, Updated: h.Updated,
			Values: map[string]json.RawMessage{}, Lists: map[string][]Item{}, Pending: map[string]json.RawMessage{}}
		c := n.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			switch k[0] {
			case kItem:
				list, ok := parseItemKey(k)
				if !ok {
					return fmt.Errorf("corrupt list item key %q", k)
				}
				it, err := decodeItem(v)
				if err != nil {
					return fmt.Errorf("list %s: %w", list, err)
				}
				s.Lists[list] = append(s.Lists[list], it)
			case kValue:
				body, err := records().unpack(v)
				if err != nil {
					return fmt.Errorf("value: %w", err)
				}
				s.Values[string(k[1:])] = body
			case kPending:
				body, err := records().unpack(v)
				if err != nil {
					return fmt.Errorf("pending write: %w", err)
				}
				s.Pending[string(k[1:])] = body
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load checkpoint %s/%s: %w", thread, ns, err)
	}
	b.c.Forget(thread, ns)
	return s, nil
}

// putSession stores s's record in its thread's head record, next to the
// records its steps write.
func putSession(tx *bolt.Tx, s Session) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	n, err := nsBucket(tx, s.ID, "", true)
	if err != nil {
		return err
	}
	h, _, err := splitHead(n.Get(keyHead))
	if err != nil {
		return err
	}
	return n.Put(keyHead, encodeHead(h, v))
}

// PutSession implements Sessions.
func (b *Bolt) PutSession(ctx context.Context, s Session) error {
	if err := b.submit(func(tx *bolt.Tx) error { return putSession(tx, s) }, true); err != nil {
		return fmt.Errorf("put session %s: %w", s.ID, err)
	}
	return nil
}

// sessionOf returns the session record in a head record, nil if none.
func sessionOf(v []byte) []byte {
	if _, s, err := splitHead(v); err == nil && len(s) > 0 {
		return s
	}
	return nil
}

// sessionRecord returns the stored record of session id, nil if none.
func sessionRecord(tx *bolt.Tx, id string) []byte {
	if n := tx.Bucket(threadBucket(id, "")); n != nil {
		return sessionOf(n.Get(keyHead))
	}
	return nil
}

// Session implements Sessions.
func (b *Bolt) Session(ctx context.Context, id string) (Session, error) {
	b.Flush()
	var s Session
	err := b.view(func(tx *bolt.Tx) error {
		v := sessionRecord(tx, id)
		if v == nil {
			return ErrNotFound
		}
		return json.Unmarshal(v, &s)
	})
	if err != nil {
		return Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	return s, nil
}

// forEachThread calls fn with each thread that has a bucket and the bucket
// of its namespace "" (nil when only other namespaces have one).
func forEachThread(tx *bolt.Tx, fn func(thread string, root *bolt.Bucket) error) error {
	c := tx.Cursor()
	last, seen := "", false
	for k, _ := c.Seek([]byte{threadPrefix}); k != nil && k[0] == threadPrefix; k, _ = c.Next() {
		thread, ns, ok := parseThreadBucket(k)
		if !ok || (seen && thread == last) {
			continue // not a thread's, or another namespace of the last thread
		}
		last, seen = thread, true
		var root *bolt.Bucket
		if ns == "" {
			root = tx.Bucket(k)
		}
		if err := fn(thread, root); err != nil {
			return err
		}
	}
	return nil
}

// Sessions implements Sessions.
func (b *Bolt) Sessions(ctx context.Context, project string) ([]Session, error) {
	b.Flush()
	var out []Session
	err := b.view(func(tx *bolt.Tx) error {
		return forEachThread(tx, func(id string, root *bolt.Bucket) error {
			if root == nil {
				return nil
			}
			_, v, err := splitHead(root.Get(keyHead))
			if err == nil && len(v) == 0 {
				return nil // a thread without a session record: not listed
			}
			var s Session
			if err != nil || json.Unmarshal(v, &s) != nil || s.ID != id {
				b.warn(fmt.Sprintf("the stored record of session %q cannot be read and is left out of the list", id))
				return nil
			}
			if project == "" || s.Project == project {
				out = append(out, s)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	sortSessions(out)
	return out, nil
}

// DeleteSession implements Sessions.
func (b *Bolt) DeleteSession(ctx context.Context, id string) (bool, error) {
	var existed bool
	err := b.submit(func(tx *bolt.Tx) error {
		existed = sessionRecord(tx, id) != nil
		return deleteThread(tx, id)
	}, true)
	if err != nil {
		return false, fmt.Errorf("delete session %s: %w", id, err)
	}
	b.removeSpool(id)
	return existed, nil
}

// deleteThread deletes the buckets of every namespace of thread.
func deleteThread(tx *bolt.Tx, thread string) error {
	prefix := threadBucketPrefix(thread)
	var doomed [][]byte
	c := tx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if t, _, ok := parseThreadBucket(k); ok && t == thread {
			doomed = append(doomed, bytes.Clone(k))
		}
	}
	for _, k := range doomed {
		if err := tx.DeleteBucket(k); err != nil {
			return err
		}
	}
	return nil
}

// DeleteOlderThan implements Sessions.
func (b *Bolt) DeleteOlderThan(ctx context.Context, t time.Time) (int, error) {
	all, err := b.Sessions(ctx, "")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range all {
		if s.Updated.Before(t) {
			if _, err := b.DeleteSession(ctx, s.ID); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// Approval implements Approvals.
func (b *Bolt) Approval(ctx context.Context, key string) (string, error) {
	var v string
	err := b.view(func(tx *bolt.Tx) error {
		if bk := tx.Bucket(bApprovals); bk != nil {
			v = string(bk.Get([]byte(key)))
		}
		return nil
	})
	return v, err
}

// SetApproval implements Approvals.
func (b *Bolt) SetApproval(ctx context.Context, key, value string) error {
	err := b.submit(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bApprovals)
		if err != nil {
			return err
		}
		if value == "" {
			return bk.Delete([]byte(key))
		}
		return bk.Put([]byte(key), []byte(value))
	}, true)
	if err != nil {
		return fmt.Errorf("store approval: %w", err)
	}
	return nil
}
