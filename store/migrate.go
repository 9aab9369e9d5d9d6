package store

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/layout"
	"github.com/agent-lsp/agent-lsp/store/internal/record"
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

// flatBucket is a namespace's bucket of the current layout, in memory: its
// records as stored (sealed).
type flatBucket struct {
	name    []byte
	seq     uint64
	entries []flatEntry
}

type flatEntry struct{ key, value []byte }

// convertLegacy turns one session of the legacy layout into the buckets of
// the current one: record is its index record (nil if none), thread its
// thread bucket read into memory (nil if none). Records are sealed, and
// compressed where that pays (format 1's are raw); each list keeps its
// items' sequence numbers, and the namespace's sequence goes on after the
// highest.
//
// A record the current layout cannot hold (a damaged item key, a list name
// with a zero byte) is left out and described to skip: one bad record
// never keeps a store from opening.
func convertLegacy(id []byte, rec []byte, thread *bucketCopy, skip func(string)) []flatBucket {
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
		if t, ns, _ := layout.ParseThreadBucket(out[i].name); t == string(id) && ns == "" {
			root = &out[i]
		}
	}
	if rec != nil {
		if root == nil {
			out = append(out, flatBucket{name: layout.ThreadBucket(string(id), "")})
			root = &out[len(out)-1]
		}
		root.setSession(rec)
	}
	return out
}

// setSession puts the session record rec into fb's head record.
func (fb *flatBucket) setSession(rec []byte) {
	sealed := record.Seal(layout.HeadPlace(fb.name, layout.PartSession), rec)
	for i, e := range fb.entries {
		if bytes.Equal(e.key, layout.KeyHead) {
			h, _, _ := layout.SplitHead(e.value)
			fb.entries[i].value = layout.EncodeHead(h, sealed)
			return
		}
	}
	fb.entries = append(fb.entries, flatEntry{bytes.Clone(layout.KeyHead), layout.EncodeHead(nil, sealed)})
}

// convertNamespace converts one legacy namespace bucket (convertLegacy).
func convertNamespace(thread, ns string, n *bucketCopy, skip func(string)) flatBucket {
	fb := flatBucket{name: layout.ThreadBucket(thread, ns)}
	put := func(key, v []byte) flatEntry {
		return flatEntry{key, record.PackAt(record.Place{Bucket: fb.name, Key: key}, v)}
	}
	for _, e := range n.entries {
		switch {
		case bytes.Equal(e.key, legacyHead) && e.bucket == nil:
			fb.entries = append(fb.entries, flatEntry{bytes.Clone(layout.KeyHead), layout.EncodeHead(record.Seal(layout.HeadPlace(fb.name, layout.PartHead), e.value), nil)})
		case bytes.Equal(e.key, legacyValues) && e.bucket != nil:
			for _, v := range e.bucket.entries {
				if v.bucket == nil {
					fb.entries = append(fb.entries, put(layout.ValueKey(string(v.key)), v.value))
				}
			}
		case bytes.Equal(e.key, legacyPending) && e.bucket != nil:
			for _, v := range e.bucket.entries {
				if v.bucket == nil {
					fb.entries = append(fb.entries, put(layout.PendingKey(string(v.key)), v.value))
				}
			}
		case bytes.Equal(e.key, legacyLists) && e.bucket != nil:
			for _, l := range e.bucket.entries {
				if l.bucket != nil {
					fb.seq = max(fb.seq, l.bucket.seq)
					fb.entries = append(fb.entries, convertList(fb.name, thread, l, skip)...)
				}
			}
		}
	}
	return fb
}

// convertList converts the items of one legacy list l of a namespace
// bucket named name.
func convertList(name []byte, thread string, l entryCopy, skip func(string)) []flatEntry {
	if bytes.IndexByte(l.key, 0) >= 0 {
		skip(fmt.Sprintf("session %q: list %q was left out: its name holds a zero byte", thread, l.key))
		return nil
	}
	var out []flatEntry
	for _, sub := range l.bucket.entries {
		if !bytes.Equal(sub.key, legacyItems) || sub.bucket == nil {
			continue // the ID index: the current layout reads items for it
		}
		for _, it := range sub.bucket.entries {
			if it.bucket != nil || len(it.key) != 8 {
				skip(fmt.Sprintf("session %q: an item of list %q was left out: its key %x is damaged", thread, l.key, it.key))
				continue
			}
			id, body, err := layout.SplitItem(it.value)
			if err != nil {
				skip(fmt.Sprintf("session %q: an item of list %q was left out: %v", thread, l.key, err))
				continue
			}
			key := append(layout.ItemPrefix(string(l.key)), it.key...)
			out = append(out, flatEntry{key, layout.SealItem(name, key, string(id), body, true)}) // format 1's raw records compress now
		}
	}
	return out
}

// pasteFlat writes fb into tx, into its bucket (created if absent), keys
// in order so that the bucket's pages fill.
func pasteFlat(tx *bolt.Tx, fb flatBucket) error {
	n, err := tx.CreateBucketIfNotExists(fb.name)
	if err != nil {
		return err
	}
	n.FillPercent = layout.AppendFill
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
