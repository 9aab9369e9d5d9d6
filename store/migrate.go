package store

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// The layout of formats 1 and 2: a session index bucket, and a bucket per
// thread holding a bucket per namespace ("ns:" ns) with the head, and
// buckets of values, lists (each with its items, keyed by its sequence, and
// an index of their IDs) and pending writes.
var (
	legacySessions = []byte("sessions")
	legacyThreads  = []byte("threads")
	legacyHead     = []byte("head")
	legacyValues   = []byte("values")
	legacyLists    = []byte("lists")
	legacyPending  = []byte("pending")
	legacyItems    = []byte("items")
)

// migrateTxBytes bounds the data one transaction of a migration converts.
const migrateTxBytes = 16 << 20

// flatBucket is a namespace's bucket of the current layout, in memory.
type flatBucket struct {
	name    []byte
	seq     uint64
	entries []flatEntry
}

type flatEntry struct{ key, value []byte }

// convertLegacy turns one session of the legacy layout into the buckets of
// the current one: record is its index record (nil if none), thread its
// thread bucket read into memory (nil if none). Records are stored
// compressed where that pays (format 1's are raw); each list keeps its
// items' sequence numbers, and the namespace's sequence goes on after the
// highest.
//
// A record the current layout cannot hold (a damaged item key, a list name
// with a zero byte) is left out and described to skip: one bad record
// never keeps a store from opening.
func convertLegacy(id []byte, record []byte, thread *bucketCopy, skip func(string)) []flatBucket {
	var out []flatBucket
	var root *flatBucket // namespace "": the session record goes there
	if thread != nil {
		for _, e := range thread.entries {
			ns, ok := strings.CutPrefix(string(e.key), "ns:")
			if !ok || e.bucket == nil {
				continue // nothing else was ever stored here
			}
			out = append(out, convertNamespace(string(id), ns, e.bucket, skip))
		}
	}
	for i := range out {
		if t, ns, _ := parseThreadBucket(out[i].name); t == string(id) && ns == "" {
			root = &out[i]
		}
	}
	if record != nil {
		if root == nil {
			out = append(out, flatBucket{name: threadBucket(string(id), "")})
			root = &out[len(out)-1]
		}
		root.setSession(record)
	}
	return out
}

// setSession puts record into fb's head record.
func (fb *flatBucket) setSession(record []byte) {
	for i, e := range fb.entries {
		if bytes.Equal(e.key, keyHead) {
			h, _, _ := splitHead(e.value)
			fb.entries[i].value = encodeHead(h, record)
			return
		}
	}
	fb.entries = append(fb.entries, flatEntry{bytes.Clone(keyHead), encodeHead(nil, record)})
}

// convertNamespace converts one legacy namespace bucket (convertLegacy).
func convertNamespace(thread, ns string, n *bucketCopy, skip func(string)) flatBucket {
	fb := flatBucket{name: threadBucket(thread, ns)}
	for _, e := range n.entries {
		switch {
		case bytes.Equal(e.key, legacyHead) && e.bucket == nil:
			fb.entries = append(fb.entries, flatEntry{bytes.Clone(keyHead), encodeHead(e.value, nil)})
		case bytes.Equal(e.key, legacyValues) && e.bucket != nil:
			for _, v := range e.bucket.entries {
				if v.bucket == nil {
					fb.entries = append(fb.entries, flatEntry{valueKey(string(v.key)), records().pack(v.value)})
				}
			}
		case bytes.Equal(e.key, legacyPending) && e.bucket != nil:
			for _, v := range e.bucket.entries {
				if v.bucket == nil {
					fb.entries = append(fb.entries, flatEntry{pendingKey(string(v.key)), records().pack(v.value)})
				}
			}
		case bytes.Equal(e.key, legacyLists) && e.bucket != nil:
			for _, l := range e.bucket.entries {
				if l.bucket == nil {
					continue
				}
				if bytes.IndexByte(l.key, 0) >= 0 {
					skip(fmt.Sprintf("session %q: list %q was left out: its name holds a zero byte", thread, l.key))
					continue
				}
				fb.seq = max(fb.seq, l.bucket.seq)
				for _, sub := range l.bucket.entries {
					if !bytes.Equal(sub.key, legacyItems) || sub.bucket == nil {
						continue // the ID index: the current layout reads items for it
					}
					for _, it := range sub.bucket.entries {
						if it.bucket != nil || len(it.key) != 8 {
							skip(fmt.Sprintf("session %q: an item of list %q was left out: its key %x is damaged", thread, l.key, it.key))
							continue
						}
						v := it.value
						if id, body, err := splitItem(v); err == nil {
							v = encodeItem(string(id), records().pack(body)) // format 1's raw records compress now
						}
						fb.entries = append(fb.entries, flatEntry{append(itemPrefix(string(l.key)), it.key...), v})
					}
				}
			}
		}
	}
	return fb
}

// pasteFlat writes fb into tx, into its bucket (created if absent), keys
// in order so that the bucket's pages fill.
func pasteFlat(tx *bolt.Tx, fb flatBucket) error {
	n, err := tx.CreateBucketIfNotExists(fb.name)
	if err != nil {
		return err
	}
	n.FillPercent = appendFill
	slices.SortFunc(fb.entries, func(a, b flatEntry) int { return bytes.Compare(a.key, b.key) })
	for _, e := range fb.entries {
		if err := n.Put(e.key, e.value); err != nil {
			return err
		}
	}
	if fb.seq > n.Sequence() {
		return n.SetSequence(fb.seq)
	}
	return nil
}

// migrate converts the sessions of the legacy layout in db to the current
// one, one transaction per txBytes of data (at least one session): a session moves in one
// transaction (its new buckets written, its old ones deleted), so a crash
// leaves every session in one layout or the other, and the next Open goes
// on. It reports how many sessions it converted.
func migrate(db *bolt.DB, txBytes int64, skip func(string)) (n int, err error) {
	for {
		done := false
		err := db.Update(func(tx *bolt.Tx) error {
			k, more, err := migrateSome(tx, txBytes, skip)
			n += k
			done = !more
			return err
		})
		if err != nil {
			return n, fmt.Errorf("convert the store to format %d: %w", Format, err)
		}
		if done {
			return n, nil
		}
	}
}

// migrateSome converts sessions in tx until about txBytes of data moved;
// more says whether any are left.
func migrateSome(tx *bolt.Tx, txBytes int64, skip func(string)) (n int, more bool, err error) {
	index, threads := tx.Bucket(legacySessions), tx.Bucket(legacyThreads)
	var size int64
	for size < txBytes {
		var id []byte
		fromThreads := false
		if threads != nil {
			if k, _ := threads.Cursor().First(); k != nil {
				id, fromThreads = bytes.Clone(k), true
			}
		}
		if id == nil && index != nil {
			if k, _ := index.Cursor().First(); k != nil {
				id = bytes.Clone(k)
			}
		}
		if id == nil {
			for _, b := range [][]byte{legacySessions, legacyThreads} {
				if tx.Bucket(b) != nil {
					if err := tx.DeleteBucket(b); err != nil {
						return n, false, err
					}
				}
			}
			return n, false, nil
		}
		var record []byte
		var thread *bucketCopy
		if index != nil {
			if v := index.Get(id); v != nil {
				record = bytes.Clone(v)
				size += int64(len(v))
			}
		}
		if threads != nil {
			if t := threads.Bucket(id); t != nil {
				if thread, err = copyBucket(t, &size, 1<<62); err != nil {
					return n, false, fmt.Errorf("session %q: %w", id, err)
				}
			}
		}
		for _, fb := range convertLegacy(id, record, thread, skip) {
			if err := pasteFlat(tx, fb); err != nil {
				return n, false, fmt.Errorf("session %q: %w", id, err)
			}
		}
		// Drop what was read: the thread's bucket (or a stray value in its
		// place), and the index's record (or a stray bucket in its place).
		if fromThreads {
			if err := dropKey(threads, id); err != nil {
				return n, false, err
			}
		}
		if index != nil {
			if err := dropKey(index, id); err != nil {
				return n, false, err
			}
		}
		n++
	}
	return n, true, nil
}

// dropKey deletes k from b, a value or a nested bucket; a missing k is fine.
func dropKey(b *bolt.Bucket, k []byte) error {
	if b.Bucket(k) != nil {
		return b.DeleteBucket(k)
	}
	return b.Delete(k)
}
