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
	bSessions = []byte("sessions")
	bThreads  = []byte("threads")
	// bApprovals holds the user's approvals of what repositories ask to run.
	bApprovals = []byte("approvals")
	bValues    = []byte("values")
	bLists     = []byte("lists")
	bPending   = []byte("pending")
	bItems     = []byte("items")
	bIDs       = []byte("ids")
	kHead      = []byte("head")
	// bMeta holds the store's own records: kFormat, its format version.
	bMeta   = []byte("meta")
	kFormat = []byte("format")
)

// Format is the store format this binary writes: 2 compresses records
// (codec.go). A file without a format record is of format 1 (records raw),
// which format 2 reads as it is; a file of a newer format is refused.
const Format = 2

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
	if err == nil {
		if ierr := initBuckets(db, path); ierr != nil {
			db.Close()
			db, err = nil, ierr
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
	if err := initBuckets(db, path); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	b := &Bolt{db: db, path: path, now: time.Now, durability: DefaultDurability, warn: func(string) {}, recovered: recovered}
	for _, o := range opts {
		o(b)
	}
	b.startCommitter()
	return b, nil
}

// initBuckets creates the top-level buckets; a damaged file makes it return a
// CorruptError rather than panic.
func initBuckets(db *bolt.DB, path string) (err error) {
	defer guard(path, &err)
	return db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bSessions, bThreads, bApprovals, bMeta} {
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
		return meta.Put(kFormat, u64(Format))
	})
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

func nsKey(ns string) []byte { return []byte("ns:" + ns) }

// nsBucket returns the bucket of (thread, ns), creating it when create is set.
func nsBucket(tx *bolt.Tx, thread, ns string, create bool) (*bolt.Bucket, error) {
	threads := tx.Bucket(bThreads)
	if !create {
		t := threads.Bucket([]byte(thread))
		if t == nil {
			return nil, nil
		}
		return t.Bucket(nsKey(ns)), nil
	}
	t, err := threads.CreateBucketIfNotExists([]byte(thread))
	if err != nil {
		return nil, err
	}
	n, err := t.CreateBucketIfNotExists(nsKey(ns))
	if err != nil {
		return nil, err
	}
	for _, name := range [][]byte{bValues, bLists, bPending} {
		if _, err := n.CreateBucketIfNotExists(name); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// appendFill is the fill percent of buckets whose keys are appended.
const appendFill = 0.95

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// encodeItem stores an item as uvarint(len(id)) id body.
func encodeItem(id string, body []byte) []byte {
	out := binary.AppendUvarint(make([]byte, 0, len(id)+len(body)+2), uint64(len(id)))
	out = append(out, id...)
	return append(out, body...)
}

// decodeItem reads an item stored by encodeItem; its body may be
// compressed (codec).
func decodeItem(v []byte) (Item, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < n {
		return Item{}, fmt.Errorf("corrupt list item")
	}
	body, err := records().unpack(v[k+int(n):])
	if err != nil {
		return Item{}, err
	}
	return Item{ID: string(v[k : k+int(n)]), Body: json.RawMessage(body)}, nil
}

func applyOps(lists *bolt.Bucket, name string, ops []Op) error {
	l, err := lists.CreateBucketIfNotExists([]byte(name))
	if err != nil {
		return err
	}
	items, err := l.CreateBucketIfNotExists(bItems)
	if err != nil {
		return err
	}
	ids, err := l.CreateBucketIfNotExists(bIDs)
	if err != nil {
		return err
	}
	// Items are appended under sequence keys, and IDs are ULIDs, which grow
	// with time: both buckets take keys at their end, so their pages split
	// full (bbolt's default splits at half, for random inserts, which left
	// every page of a session's history half empty).
	items.FillPercent, ids.FillPercent = appendFill, appendFill
	for _, op := range ops {
		switch op.Kind {
		case OpReset:
			for _, sub := range [][]byte{bItems, bIDs} {
				if err := l.DeleteBucket(sub); err != nil {
					return err
				}
			}
			if items, err = l.CreateBucket(bItems); err != nil {
				return err
			}
			if ids, err = l.CreateBucket(bIDs); err != nil {
				return err
			}
			items.FillPercent, ids.FillPercent = appendFill, appendFill
		case OpRemove:
			seq := ids.Get([]byte(op.ID))
			if seq == nil {
				continue
			}
			if err := items.Delete(seq); err != nil {
				return err
			}
			if err := ids.Delete([]byte(op.ID)); err != nil {
				return err
			}
		case OpUpsert:
			var key []byte
			if op.ID != "" {
				key = bytes.Clone(ids.Get([]byte(op.ID)))
			}
			if key == nil {
				seq, err := l.NextSequence()
				if err != nil {
					return err
				}
				key = u64(seq)
				if op.ID != "" {
					if err := ids.Put([]byte(op.ID), key); err != nil {
						return err
					}
				}
			}
			if err := items.Put(key, encodeItem(op.ID, records().pack(op.Body))); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown list op %d", op.Kind)
		}
	}
	return nil
}

func (b *Bolt) putTx(tx *bolt.Tx, cp Checkpoint) error {
	n, err := nsBucket(tx, cp.Thread, cp.Namespace, true)
	if err != nil {
		return err
	}
	var old head
	if v := n.Get(kHead); v != nil {
		if err := json.Unmarshal(v, &old); err != nil {
			return fmt.Errorf("corrupt checkpoint head: %w", err)
		}
		if old.Step != cp.Step {
			if err := clearPending(n); err != nil {
				return err
			}
		}
	}
	h, err := json.Marshal(head{Step: cp.Step, Status: cp.Status, Next: cp.Next, Updated: b.now()})
	if err != nil {
		return err
	}
	if err := n.Put(kHead, h); err != nil {
		return err
	}
	values := n.Bucket(bValues)
	for k, v := range cp.Values {
		if err := values.Put([]byte(k), records().pack(v)); err != nil {
			return err
		}
	}
	lists := n.Bucket(bLists)
	for name, ops := range cp.Lists {
		if err := applyOps(lists, name, ops); err != nil {
			return fmt.Errorf("list %s: %w", name, err)
		}
	}
	if cp.Index != nil {
		return putSession(tx, *cp.Index)
	}
	return nil
}

// clearPending drops the pending writes of the namespace n. An empty
// bucket is left as it is: most steps have none, and deleting and creating
// the bucket would rewrite its parent's page at every step.
func clearPending(n *bolt.Bucket) error {
	if k, _ := n.Bucket(bPending).Cursor().First(); k == nil {
		return nil
	}
	if err := n.DeleteBucket(bPending); err != nil {
		return err
	}
	_, err := n.CreateBucket(bPending)
	return err
}

// Put implements Checkpointer. When it returns, the checkpoint is durable in
// Sync mode, and in every mode when it ends a run (a status that Ended).
func (b *Bolt) Put(ctx context.Context, cp Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
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
		p := n.Bucket(bPending)
		if p.Get([]byte(taskID)) != nil {
			return nil
		}
		return p.Put([]byte(taskID), records().pack(w))
	}
	if err := b.write(ctx, threadKey{thread, ns}, apply, false); err != nil {
		return fmt.Errorf("put pending write %s/%s %s: %w", thread, ns, taskID, err)
	}
	return nil
}

// Load implements Checkpointer.
func (b *Bolt) Load(ctx context.Context, thread, ns string) (*State, error) {
	if err := b.Flush(); err != nil {
		return nil, fmt.Errorf("load checkpoint %s/%s: %w", thread, ns, err)
	}
	var s *State
	err := b.view(func(tx *bolt.Tx) error {
		n, _ := nsBucket(tx, thread, ns, false)
		if n == nil || n.Get(kHead) == nil {
			return ErrNotFound
		}
		var h head
		if err := json.Unmarshal(n.Get(kHead), &h); err != nil {
			return fmt.Errorf("corrupt checkpoint head: %w", err)
		}
		s = &State{Step: h.Step, Status: h.Status, Next: h.Next, Updated: h.Updated,
			Values: map[string]json.RawMessage{}, Lists: map[string][]Item{}, Pending: map[string]json.RawMessage{}}
		if err := n.Bucket(bValues).ForEach(func(k, v []byte) error {
			body, err := records().unpack(v)
			s.Values[string(k)] = body
			return err
		}); err != nil {
			return fmt.Errorf("value: %w", err)
		}
		if err := n.Bucket(bPending).ForEach(func(k, v []byte) error {
			body, err := records().unpack(v)
			s.Pending[string(k)] = body
			return err
		}); err != nil {
			return fmt.Errorf("pending write: %w", err)
		}
		return n.Bucket(bLists).ForEachBucket(func(name []byte) error {
			items := n.Bucket(bLists).Bucket(name).Bucket(bItems)
			var list []Item
			err := items.ForEach(func(_, v []byte) error {
				it, err := decodeItem(v)
				list = append(list, it)
				return err
			})
			s.Lists[string(name)] = list
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load checkpoint %s/%s: %w", thread, ns, err)
	}
	return s, nil
}

func putSession(tx *bolt.Tx, s Session) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.Bucket(bSessions).Put([]byte(s.ID), v)
}

// PutSession implements Sessions.
func (b *Bolt) PutSession(ctx context.Context, s Session) error {
	if err := b.submit(func(tx *bolt.Tx) error { return putSession(tx, s) }, true); err != nil {
		return fmt.Errorf("put session %s: %w", s.ID, err)
	}
	return nil
}

// Session implements Sessions.
func (b *Bolt) Session(ctx context.Context, id string) (Session, error) {
	b.Flush()
	var s Session
	err := b.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bSessions).Get([]byte(id))
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

// Sessions implements Sessions.
func (b *Bolt) Sessions(ctx context.Context, project string) ([]Session, error) {
	b.Flush()
	var out []Session
	err := b.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bSessions).ForEach(func(k, v []byte) error {
			var s Session
			if err := json.Unmarshal(v, &s); err != nil || s.ID != string(k) {
				b.warn(fmt.Sprintf("the stored record of session %q cannot be read and is left out of the list", string(k)))
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
		existed = tx.Bucket(bSessions).Get([]byte(id)) != nil
		if err := tx.Bucket(bSessions).Delete([]byte(id)); err != nil {
			return err
		}
		if tx.Bucket(bThreads).Bucket([]byte(id)) != nil {
			return tx.Bucket(bThreads).DeleteBucket([]byte(id))
		}
		return nil
	}, true)
	if err != nil {
		return false, fmt.Errorf("delete session %s: %w", id, err)
	}
	return existed, nil
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
