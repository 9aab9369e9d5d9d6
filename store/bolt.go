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
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/layout"
	"github.com/agent-lsp/agent-lsp/store/internal/record"
)

// Format is the store format this binary writes (store/internal/layout):
// 4 seals every record with a checksum. Open converts files of formats 1 to
// 3 (store/internal/convert) and refuses newer ones.
const Format = layout.Format

// ErrNewerFormat is returned by Open for a store written by a newer
// agent-lsp, whose records this binary may not read.
var ErrNewerFormat = errors.New("the store was written by a newer agent-lsp: upgrade agent-lsp")

// ErrReadOnly is returned for writes to a store opened with OpenReadOnly.
var ErrReadOnly = errors.New("the store was opened read-only")

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
	// strict says the file's records are sealed (format 4): they are
	// sealed when written, and one without a seal is damage when read. It
	// is false only for a benchmark's reference store, which writes and
	// reads records as format 3 did (BenchmarkChecksum).
	strict   bool
	readOnly bool
	damage   damageLog
	// opened is the damage of the file a read-only view was salvaged
	// from, which Check reports.
	opened []string
	c      *Committer[boltWork]
	// release removes what a read-only view made (a converted copy of an
	// older or damaged file); nil when it made nothing.
	release   func()
	closeOnce sync.Once
	closeErr  error
}

// Option configures Open.
type Option func(*Bolt)

// WithDefaultDurability sets the durability of runs that do not choose one.
func WithDefaultDurability(d Durability) Option { return func(b *Bolt) { b.durability = d } }

// WithWarn reports problems that do not stop the store, such as a record
// that cannot be read and is skipped.
func WithWarn(warn func(string)) Option { return func(b *Bolt) { b.warn = warn } }

func newBolt(path string, opts []Option) *Bolt {
	b := &Bolt{path: path, now: time.Now, durability: DefaultDurability, warn: func(string) {}, strict: true}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Open opens or creates the store file at path, creating its directory.
//
// A file of an earlier format is converted to this one (upgrade). A
// damaged file (one bbolt cannot be trusted with: a page tree that would
// make it fault, loop or read the wrong pages) is salvaged: every session
// that can still be read is copied into a new file, the damaged one is
// moved aside as <path>.corrupt-<time>, and the new one takes its place;
// Recovered then says what was kept and what was lost. Records damaged
// inside (a checksum that fails) are found when they are read: Load leaves
// them out and names them (WithWarn), and Check lists them all.
func Open(path string, opts ...Option) (*Bolt, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	b := newBolt(path, opts)
	db, recovered, notes, err := openFile(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	b.db, b.recovered = db, recovered
	b.startCommitter()
	for _, m := range notes {
		b.warn(m)
	}
	return b, nil
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

// Name implements Store: the file's path.
func (b *Bolt) Name() string { return b.path }

// Acquire implements Leases: the file is locked by the one process that
// holds it (the daemon, or a server without one), which runs each of its
// sessions once (agent.Runs): there is nothing to take.
func (b *Bolt) Acquire(ctx context.Context, session string, ttl time.Duration, lost func()) (func(), error) {
	return noLease(), nil
}

// Recovered says what Open did with a damaged store file ("" when nothing):
// the user should be told.
func (b *Bolt) Recovered() string { return b.recovered }

// view runs a read transaction, turning a bbolt panic on a damaged page
// or a fault (a page the file no longer has) into an error.
func (b *Bolt) view(fn func(tx *bolt.Tx) error) (err error) {
	b.swap.RLock()
	defer b.swap.RUnlock()
	return guarded(b.path, func() error { return b.db.View(fn) })
}

// Close writes what is queued (and the held steps of unfinished runs in Exit
// mode), then closes the file.
func (b *Bolt) Close() error {
	b.closeOnce.Do(func() {
		b.c.Close() // a failed batched write was reported to the run's next write
		b.swap.Lock()
		defer b.swap.Unlock()
		b.closeErr = b.db.Close()
		if b.release != nil {
			b.release()
		}
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
	name := layout.ThreadBucket(thread, ns)
	if !create {
		return tx.Bucket(name), nil
	}
	n, err := tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, err
	}
	n.FillPercent = layout.AppendFill
	return n, nil
}

func (b *Bolt) putTx(tx *bolt.Tx, cp Checkpoint) error {
	name := layout.ThreadBucket(cp.Thread, cp.Namespace)
	n, err := nsBucket(tx, cp.Thread, cp.Namespace, true)
	if err != nil {
		return err
	}
	oldHead, session, err := layout.SplitHead(n.Get(layout.KeyHead))
	if err != nil {
		// A damaged head record: the new head replaces it, and the
		// session record goes with it unless this step writes one.
		oldHead, session = nil, nil
	}
	if len(oldHead) > 0 {
		// The pending writes belong to the old head's step: a new step, or
		// a head whose step cannot be read, drops them.
		raw, err := record.Unseal(layout.HeadPlace(name, layout.PartHead), oldHead, b.strict)
		oldStep := -1
		if err == nil {
			oldStep, err = headStep(raw)
		}
		if err == nil && cp.Step > oldStep+1 {
			return &GapError{Step: cp.Step, Stored: oldStep}
		}
		if err != nil || oldStep != cp.Step {
			if err := deletePrefix(n, []byte{layout.KPending}); err != nil {
				return err
			}
		}
	}
	for list, ops := range cp.Lists {
		if err := applyOps(n, name, list, ops, b.strict); err != nil {
			return fmt.Errorf("list %s: %w", list, err)
		}
	}
	for k, v := range cp.Values {
		key := layout.ValueKey(k)
		if err := n.Put(key, record.PackAs(b.strict, record.Place{Bucket: name, Key: key}, v)); err != nil {
			return err
		}
	}
	h, err := json.Marshal(head{Step: cp.Step, Status: cp.Status, Next: cp.Next, Updated: b.now()})
	if err != nil {
		return err
	}
	if idx := cp.Index; idx != nil && idx.ID == cp.Thread && cp.Namespace == "" {
		// The session record shares the head's record (store/internal/layout).
		v, err := json.Marshal(idx)
		if err != nil {
			return err
		}
		session = record.SealAs(b.strict, layout.HeadPlace(name, layout.PartSession), v)
	} else if idx != nil {
		if err := putSession(tx, *idx, b.strict); err != nil {
			return err
		}
	}
	return n.Put(layout.KeyHead, layout.EncodeHead(record.SealAs(b.strict, layout.HeadPlace(name, layout.PartHead), h), session))
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
	if b.readOnly {
		return fmt.Errorf("put checkpoint %s/%s step %d: %w", cp.Thread, cp.Namespace, cp.Step, ErrReadOnly)
	}
	if err := checkLists(cp.Lists); err != nil {
		return fmt.Errorf("put checkpoint %s/%s step %d: %w", cp.Thread, cp.Namespace, cp.Step, err)
	}
	if cp.Step == 0 {
		b.c.Forget(cp.Thread, cp.Namespace) // a new run of a thread never stored
	}
	apply := func(tx *bolt.Tx) error { return b.putTx(tx, cp) }
	if err := b.write(cp.Durability, threadKey{cp.Thread, cp.Namespace}, apply, cp.Status.Ended()); err != nil {
		return fmt.Errorf("put checkpoint %s/%s step %d: %w", cp.Thread, cp.Namespace, cp.Step, err)
	}
	return nil
}

// PutWrite implements Checkpointer.
func (b *Bolt) PutWrite(ctx context.Context, w PendingWrite) error {
	fail := func(err error) error {
		return fmt.Errorf("put pending write %s/%s %s: %w", w.Thread, w.Namespace, w.Task, err)
	}
	if b.readOnly {
		return fail(ErrReadOnly)
	}
	name := layout.ThreadBucket(w.Thread, w.Namespace)
	apply := func(tx *bolt.Tx) error {
		n, err := nsBucket(tx, w.Thread, w.Namespace, true)
		if err != nil {
			return err
		}
		k := layout.PendingKey(w.Task)
		if n.Get(k) != nil {
			return nil
		}
		return n.Put(k, record.PackAs(b.strict, record.Place{Bucket: name, Key: k}, w.Writes))
	}
	if err := b.write(w.Durability, threadKey{w.Thread, w.Namespace}, apply, false); err != nil {
		return fail(err)
	}
	return nil
}

// Load implements Checkpointer. Records of the namespace that are damaged
// are left out and named (WithWarn; Damage counts them): the lists load
// without their damaged items, a damaged value or pending write is as if it
// had not been written. A damaged head (the checkpoint's step, status and
// planned tasks) fails the load with an error wrapping ErrDamaged: there is
// no checkpoint to go on from. A run that loads a stored thread starts from
// what is stored: the refusal of the thread's writes after one failed ends
// (Committer.Forget), and the store refuses a step that does not follow the
// stored one (GapError).
func (b *Bolt) Load(ctx context.Context, thread, ns string) (*State, error) {
	if err := b.Flush(); err != nil {
		return nil, fmt.Errorf("load checkpoint %s/%s: %w", thread, ns, err)
	}
	var s *State
	var damaged []damage
	err := b.view(func(tx *bolt.Tx) error {
		n, _ := nsBucket(tx, thread, ns, false)
		if n == nil {
			return ErrNotFound
		}
		var err error
		s, damaged, err = loadNamespace(n, layout.ThreadBucket(thread, ns), b.strict)
		return err
	})
	for _, d := range damaged {
		b.damaged(thread, ns, d)
	}
	if errors.Is(err, ErrDamaged) {
		b.damaged(thread, ns, damage{what: "the checkpoint", err: err})
	}
	if err != nil {
		return nil, fmt.Errorf("load checkpoint %s/%s: %w", thread, ns, err)
	}
	b.c.Forget(thread, ns)
	return s, nil
}

// loadNamespace reads the namespace bucket n, named name: its head, and
// every record it can read. What it cannot read is listed in damaged; a
// head it cannot read is an error wrapping ErrDamaged.
func loadNamespace(n *bolt.Bucket, name []byte, strict bool) (s *State, damaged []damage, err error) {
	s = &State{Values: map[string]json.RawMessage{}, Lists: map[string][]Item{}, Pending: map[string]json.RawMessage{}}
	var headRec []byte
	records := 0
	var maxSeq uint64
	pre := record.BucketSum(name)
	c := n.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if k[0] == layout.KHead && len(k) == 1 {
			headRec = v
			continue
		}
		records++
		if what, err := loadRecord(s, name, pre, k, v, strict); err != nil {
			damaged = append(damaged, damage{what: what, err: err})
		}
		if k[0] == layout.KItem && len(k) >= 10 {
			maxSeq = max(maxSeq, binary.BigEndian.Uint64(k[len(k)-8:]))
		}
	}
	if maxSeq > n.Sequence() {
		damaged = append(damaged, damage{what: "the namespace's item counter", err: fmt.Errorf("%w: it is behind its items (%d < %d): new items would replace old ones", ErrDamaged, n.Sequence(), maxSeq)})
	}
	if headRec == nil {
		if records > 0 {
			return nil, damaged, fmt.Errorf("%w: its head is missing (%d records without it)", ErrDamaged, records)
		}
		return nil, damaged, ErrNotFound
	}
	h, _, err := layout.SplitHead(headRec)
	if err == nil && len(h) > 0 {
		h, err = record.Unseal(layout.HeadPlace(name, layout.PartHead), h, strict)
	}
	if err != nil {
		return nil, damaged, fmt.Errorf("its head: %w", err)
	}
	if len(h) == 0 {
		return nil, damaged, ErrNotFound // a session record without a checkpoint
	}
	var hd head
	if err := json.Unmarshal(h, &hd); err != nil {
		return nil, damaged, fmt.Errorf("%w: its head cannot be decoded: %v", ErrDamaged, err)
	}
	s.Step, s.Status, s.Next, s.Updated = hd.Step, hd.Status, hd.Next, hd.Updated
	return s, damaged, nil
}

// loadRecord adds the record v at key k of namespace bucket name to s;
// what names it in a report of its damage.
func loadRecord(s *State, name []byte, pre uint32, k, v []byte, strict bool) (what string, err error) {
	switch k[0] {
	case layout.KItem:
		list, ok := layout.ParseItemKey(k)
		if !ok {
			return fmt.Sprintf("list item %x", k), fmt.Errorf("%w: its key cannot be read", ErrDamaged)
		}
		what = fmt.Sprintf("item %d of list %s", layout.ItemSeq(k), list)
		if v == nil {
			return what, fmt.Errorf("%w: it is marked as a bucket", ErrDamaged)
		}
		id, body, err := layout.DecodeItem(record.In(name, pre, k), v, strict)
		if err != nil {
			if id, _, ierr := layout.SplitItem(v[min(len(v), record.SealSize):]); ierr == nil && len(id) > 0 && len(id) <= 64 {
				what += fmt.Sprintf(" (ID %q, as far as it can be read)", id)
			}
			return what, err
		}
		s.Lists[list] = append(s.Lists[list], Item{ID: id, Body: body})
	case layout.KValue, layout.KPending:
		kind, into := "value", s.Values
		if k[0] == layout.KPending {
			kind, into = "pending write", s.Pending
		}
		what = fmt.Sprintf("%s %q", kind, k[1:])
		if v == nil {
			return what, fmt.Errorf("%w: it is marked as a bucket", ErrDamaged)
		}
		body, err := record.UnpackAt(record.In(name, pre, k), v, strict)
		if err != nil {
			return what, err
		}
		into[string(k[1:])] = body
	}
	// Other kinds are not a checkpoint's: left to what wrote them.
	return "", nil
}

// putSession stores s's record in its thread's head record, next to the
// records its steps write.
func putSession(tx *bolt.Tx, s Session, strict bool) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	n, err := nsBucket(tx, s.ID, "", true)
	if err != nil {
		return err
	}
	h, _, err := layout.SplitHead(n.Get(layout.KeyHead))
	if err != nil {
		h = nil // a damaged head record: the checkpoint's head is lost with it
	}
	return n.Put(layout.KeyHead, layout.EncodeHead(h, record.SealAs(strict, layout.HeadPlace(layout.ThreadBucket(s.ID, ""), layout.PartSession), v)))
}

// PutSession implements Sessions.
func (b *Bolt) PutSession(ctx context.Context, s Session) error {
	if b.readOnly {
		return fmt.Errorf("put session %s: %w", s.ID, ErrReadOnly)
	}
	if err := b.submit(func(tx *bolt.Tx) error { return putSession(tx, s, b.strict) }, true); err != nil {
		return fmt.Errorf("put session %s: %w", s.ID, err)
	}
	return nil
}

// sessionOf returns the session record (JSON) in the head record v of
// thread's namespace "": nil when it has none, an error wrapping
// ErrDamaged when it is damaged.
func sessionOf(thread string, v []byte, strict bool) ([]byte, error) {
	_, sealed, err := layout.SplitHead(v)
	if err != nil || len(sealed) == 0 {
		return nil, err
	}
	return record.Unseal(layout.HeadPlace(layout.ThreadBucket(thread, ""), layout.PartSession), sealed, strict)
}

// hasSession reports whether thread has a session record, whole or not.
func hasSession(tx *bolt.Tx, thread string) bool {
	if n := tx.Bucket(layout.ThreadBucket(thread, "")); n != nil {
		_, s, err := layout.SplitHead(n.Get(layout.KeyHead))
		return err != nil || len(s) > 0
	}
	return false
}

// Session implements Sessions. A damaged record is an error wrapping
// ErrDamaged, and is named (WithWarn).
func (b *Bolt) Session(ctx context.Context, id string) (Session, error) {
	b.Flush()
	var s Session
	var bad error
	err := b.view(func(tx *bolt.Tx) error {
		n := tx.Bucket(layout.ThreadBucket(id, ""))
		if n == nil {
			return ErrNotFound
		}
		v, err := sessionOf(id, n.Get(layout.KeyHead), b.strict)
		if err == nil && v == nil {
			return ErrNotFound
		}
		if err == nil {
			err = decodeSession(v, id, &s)
		}
		bad = err
		return err
	})
	if bad != nil {
		b.damaged(id, "", damage{what: "the session's record", err: bad})
	}
	if err != nil {
		return Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	return s, nil
}

// decodeSession decodes session id's record v into s.
func decodeSession(v []byte, id string, s *Session) error {
	if err := json.Unmarshal(v, s); err != nil {
		return fmt.Errorf("%w: the record cannot be decoded: %v", ErrDamaged, err)
	}
	if s.ID != id {
		return fmt.Errorf("%w: the record names session %q", ErrDamaged, s.ID)
	}
	return nil
}

// forEachThread calls fn with each thread that has a bucket and the bucket
// of its namespace "" (nil when only other namespaces have one).
func forEachThread(tx *bolt.Tx, fn func(thread string, root *bolt.Bucket) error) error {
	c := tx.Cursor()
	last, seen := "", false
	for k, _ := c.Seek([]byte{layout.ThreadPrefix}); k != nil && k[0] == layout.ThreadPrefix; k, _ = c.Next() {
		thread, ns, ok := layout.ParseThreadBucket(k)
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

// Sessions implements Sessions. A session whose record is damaged is left
// out and named (WithWarn).
func (b *Bolt) Sessions(ctx context.Context, project string) ([]Session, error) {
	b.Flush()
	var out []Session
	type bad struct {
		id  string
		err error
	}
	var damaged []bad
	err := b.view(func(tx *bolt.Tx) error {
		return forEachThread(tx, func(id string, root *bolt.Bucket) error {
			if root == nil {
				return nil
			}
			v, err := sessionOf(id, root.Get(layout.KeyHead), b.strict)
			if err == nil && v == nil {
				return nil // a thread without a session record: not listed
			}
			var s Session
			if err == nil {
				err = decodeSession(v, id, &s)
			}
			if err != nil {
				damaged = append(damaged, bad{id, err})
				return nil
			}
			if project == "" || s.Project == project {
				out = append(out, s)
			}
			return nil
		})
	})
	for _, d := range damaged {
		b.damaged(d.id, "", damage{what: "the session's record", err: d.err})
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	sortSessions(out)
	return out, nil
}

// DeleteSession implements Sessions.
func (b *Bolt) DeleteSession(ctx context.Context, id string) (bool, error) {
	if b.readOnly {
		return false, fmt.Errorf("delete session %s: %w", id, ErrReadOnly)
	}
	var existed bool
	err := b.submit(func(tx *bolt.Tx) error {
		existed = hasSession(tx, id)
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
	prefix := layout.ThreadBucketPrefix(thread)
	var doomed [][]byte
	c := tx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if t, _, ok := layout.ParseThreadBucket(k); ok && t == thread {
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

// Approval implements Approvals. A damaged approval is no approval: it
// reads as "" (the user is asked again), and is named (WithWarn).
func (b *Bolt) Approval(ctx context.Context, key string) (string, error) {
	var v []byte
	var bad error
	err := b.view(func(tx *bolt.Tx) error {
		if bk := tx.Bucket(layout.Approvals); bk != nil {
			if raw := bk.Get([]byte(key)); raw != nil {
				v, bad = record.Unseal(record.Place{Bucket: layout.Approvals, Key: []byte(key)}, raw, b.strict)
				v = bytes.Clone(v)
			}
		}
		return nil
	})
	if bad != nil {
		b.damaged("", "", damage{what: fmt.Sprintf("the approval %q (it is asked for again)", key), err: bad})
		return "", err
	}
	return string(v), err
}

// SetApproval implements Approvals.
func (b *Bolt) SetApproval(ctx context.Context, key, value string) error {
	if b.readOnly {
		return fmt.Errorf("store approval: %w", ErrReadOnly)
	}
	err := b.submit(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(layout.Approvals)
		if err != nil {
			return err
		}
		if value == "" {
			return bk.Delete([]byte(key))
		}
		return bk.Put([]byte(key), record.SealAs(b.strict, record.Place{Bucket: layout.Approvals, Key: []byte(key)}, []byte(value)))
	}, true)
	if err != nil {
		return fmt.Errorf("store approval: %w", err)
	}
	return nil
}
