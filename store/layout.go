package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"

	bolt "go.etcd.io/bbolt"
)

// The bbolt file's layout (format 3). A step's commit rewrites the path
// from the root to every page it changes (bbolt copies on write), so the
// layout keeps what a step writes on as few pages as it can: each thread's
// namespace is one top-level bucket, and in it what every step writes (the
// new list items, and one record of the head and the session) sorts at the
// bucket's end, on its last page.
//
// Top-level buckets:
//
//	meta                    format: the store's format version
//	approvals               key: the user's answer
//	threadPrefix thread ns  a thread's namespace (name: threadBucket)
//
// Keys of a namespace's bucket, in their order:
//
//	kPending task           a finished task's pending writes
//	kValue name             a last-value channel's value
//	kItem list 0x00 seq8    a list item: uvarint(len(id)) id body (encodeItem)
//	kHead                   the head: the checkpoint's head and the session
//	                        record (encodeHead)
//
// The head is the bucket's last key, written at every step, and a list's
// items' seq8 are the bucket's NextSequence, big-endian: an append lands
// just before the head. bbolt leaves at least two keys on the right of a
// page it splits, so the head always shares its page with the newest
// items, and a step that appends a message and moves the head rewrites
// one leaf. (Had the session record a key of its own, a split between the
// two would put every later step on two leaves.) Values and pending writes,
// written by few steps, sort first. Values, pending writes and item bodies
// are records (codec.go): compressed when that pays.
//
// Format 4 seals every record (codec.go): the value of each key above, and
// each part of the head record on its own, carries a CRC32C of its bytes and
// of its place (the bucket's name and the key), so damage anywhere in it,
// its key or its bucket's name is found when it is read. The approvals'
// values are sealed too; the format record stays 8 bytes, with its own
// checksum beside it (kFormatSum), so that a binary of format 3 still reads
// the version and refuses the file. Format 3 kept records without seals.
//
// Formats 1 and 2 kept the session index in a bucket of its own and each
// namespace as nested buckets (values, lists, each list's items and an ID
// index, pending): twelve pages per commit. Open converts them (migrate.go).
const (
	threadPrefix = 0x01
	kPending     = 'P'
	kValue       = 'V'
	kItem        = 'a'
	kHead        = 'h'
)

// threadBucket is the name of the bucket of thread's namespace ns:
// threadPrefix uvarint(len(thread)) thread ns. The thread's length makes
// the name unambiguous, and the names of one thread's namespaces share the
// prefix threadBucketPrefix(thread), namespace "" first.
func threadBucket(thread, ns string) []byte {
	return append(threadBucketPrefix(thread), ns...)
}

// threadBucketPrefix is the prefix of the names of thread's buckets.
func threadBucketPrefix(thread string) []byte {
	out := binary.AppendUvarint(append(make([]byte, 0, len(thread)+12), threadPrefix), uint64(len(thread)))
	return append(out, thread...)
}

// parseThreadBucket splits a top-level bucket name into its thread and
// namespace; ok is false for a name of another kind.
func parseThreadBucket(name []byte) (thread, ns string, ok bool) {
	if len(name) == 0 || name[0] != threadPrefix {
		return "", "", false
	}
	n, k := binary.Uvarint(name[1:])
	if k <= 0 || uint64(len(name)-1-k) < n {
		return "", "", false
	}
	rest := name[1+k:]
	return string(rest[:n]), string(rest[n:]), true
}

// keyHead is the key of a namespace's head.
var keyHead = []byte{kHead}

// The parts of a head record, which are sealed on their own.
const (
	partHead    = 0
	partSession = 1
)

// headPlace is the place of a part of namespace bucket's head record.
func headPlace(bucket []byte, part byte) place {
	return place{bucket: bucket, key: keyHead, part: part}
}

// encodeHead makes the head record of a namespace: uvarint(len(head)) head
// session, where head is the checkpoint's head (JSON, sealed at partHead),
// empty when the namespace has no checkpoint yet, and session the session
// record (JSON, sealed at partSession), kept in namespace "" only, empty
// when there is none.
func encodeHead(head, session []byte) []byte {
	out := binary.AppendUvarint(make([]byte, 0, len(head)+len(session)+3), uint64(len(head)))
	return append(append(out, head...), session...)
}

// splitHead splits a head record (nil: no record) into its parts, still
// sealed.
func splitHead(v []byte) (head, session []byte, err error) {
	if v == nil {
		return nil, nil, nil
	}
	n, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < n {
		return nil, nil, fmt.Errorf("%w: the head record's parts cannot be told apart", ErrDamaged)
	}
	return v[k : k+int(n)], v[k+int(n):], nil
}

func valueKey(name string) []byte   { return append([]byte{kValue}, name...) }
func pendingKey(task string) []byte { return append([]byte{kPending}, task...) }

// itemPrefix is the prefix of list's item keys: kItem list 0x00. A list
// name never holds a zero byte (checked by Put), so one list's prefix is
// never another's.
func itemPrefix(list string) []byte {
	return append(append(append(make([]byte, 0, len(list)+10), kItem), list...), 0)
}

func itemKey(list string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(itemPrefix(list), seq)
}

// parseItemKey splits an item key into its list's name; ok is false for a
// key of another kind.
func parseItemKey(k []byte) (list string, ok bool) {
	if len(k) < 10 || k[0] != kItem || k[len(k)-9] != 0 {
		return "", false
	}
	return string(k[1 : len(k)-9]), true
}

// appendFill is the fill percent of the namespaces' buckets: their keys
// are appended (items at the end of their range, the step's records after
// them), so a page that splits keeps 95% of it and the rest moves on
// (bbolt's default splits at half, for random inserts, which left every
// page of a session's history half empty).
const appendFill = 0.95

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// encodeItem makes an item's record, to be sealed: uvarint(len(id)) id
// body, where body is stored as compress returns it.
func encodeItem(id string, body []byte) []byte {
	out := binary.AppendUvarint(make([]byte, 0, len(id)+len(body)+2), uint64(len(id)))
	out = append(out, id...)
	return append(out, body...)
}

// splitItem splits an item's record (unsealed) into its ID and its stored
// body, without reading the body.
func splitItem(v []byte) (id, body []byte, err error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < n {
		return nil, nil, fmt.Errorf("%w: the list item's ID cannot be read", ErrDamaged)
	}
	return v[k : k+int(n)], v[k+int(n):], nil
}

// sealItem returns the stored value of an item at key k of bucket, sealed
// when strict.
func sealItem(bucket, k []byte, id string, body []byte, strict bool) []byte {
	return sealAs(strict, place{bucket: bucket, key: k}, encodeItem(id, records().compress(body)))
}

// openItem returns the ID and the stored body of the item value v at place
// at, checking its seal (strict: it must have one).
func openItem(at place, v []byte, strict bool) (id, body []byte, err error) {
	payload, err := unseal(at, v, strict)
	if err != nil {
		return nil, nil, err
	}
	return splitItem(payload)
}

// decodeItem reads the item value v at place at.
func decodeItem(at place, v []byte, strict bool) (Item, error) {
	id, stored, err := openItem(at, v, strict)
	if err != nil {
		return Item{}, err
	}
	body, err := records().decompress(stored)
	if err != nil {
		return Item{}, err
	}
	return Item{ID: string(id), Body: body}, nil
}

// applyOps applies one step's operations on list to the namespace's
// bucket n.
//
// OpAppend and an ID-less OpUpsert append at the list's end without
// reading it. OpUpsert with an ID and OpRemove need the item with the ID:
// the list is read from its end back, once per call and only as far as
// needed (replacing a recent message reads a few items; removing old ones,
// as compaction does, reads the list once).
func applyOps(n *bolt.Bucket, bucket []byte, list string, ops []Op, strict bool) error {
	prefix := itemPrefix(list)
	var want map[string]bool // the IDs the ops look up
	for _, op := range ops {
		if op.ID != "" && (op.Kind == OpRemove || op.Kind == OpUpsert) {
			if want == nil {
				want = map[string]bool{}
			}
			want[op.ID] = true
		}
	}
	// keys holds the key of each wanted ID that is present; an ID that is
	// wanted and not in keys is absent.
	keys := map[string][]byte{}
	if len(want) > 0 {
		if err := findItems(n, bucket, prefix, want, keys, strict); err != nil {
			return err
		}
	}
	for _, op := range ops {
		switch op.Kind {
		case OpReset:
			if err := deletePrefix(n, prefix); err != nil {
				return err
			}
			clear(keys)
		case OpRemove:
			k, ok := keys[op.ID]
			if !ok {
				continue
			}
			if err := n.Delete(k); err != nil {
				return err
			}
			delete(keys, op.ID)
		case OpUpsert, OpAppend:
			var key []byte
			if op.Kind == OpUpsert && op.ID != "" {
				key = keys[op.ID]
			}
			if key == nil {
				seq, err := n.NextSequence()
				if err != nil {
					return err
				}
				key = itemKey(list, seq)
				if op.ID != "" && want[op.ID] {
					keys[op.ID] = key
				}
			}
			if err := n.Put(key, sealItem(bucket, key, op.ID, op.Body, strict)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown list op %d", op.Kind)
		}
	}
	return nil
}

// findItems records in keys the key of each ID in want that an item under
// prefix has (the newest such item), reading the items from the last back
// and stopping once all are found.
//
// An item whose record is damaged matches no ID: Load leaves it out, and
// an upsert of its ID appends a new item.
//
// bbolt's Cursor.Prev does not step over a leaf that deletes earlier in
// the same transaction emptied (Next, Seek and Last do): a walk back can
// end early. When it ends without finding every ID, the items it did not
// reach are read forward.
func findItems(n *bolt.Bucket, bucket, prefix []byte, want map[string]bool, keys map[string][]byte, strict bool) error {
	pre := bucketSum(bucket)
	c := n.Cursor()
	// The key after the range: prefix with its last byte (0) raised by one.
	end := append(bytes.Clone(prefix[:len(prefix)-1]), 1)
	k, v := c.Seek(end)
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	var lowest []byte // the lowest key the walk back read
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		lowest = k
		id, _, err := openItem(in(bucket, pre, k), v, strict)
		if err != nil {
			continue
		}
		if want[string(id)] {
			if _, seen := keys[string(id)]; !seen {
				keys[string(id)] = bytes.Clone(k)
				if len(keys) == len(want) {
					return nil
				}
			}
		}
	}
	lowest = bytes.Clone(lowest)
	found := map[string][]byte{} // the newest match of each ID the walk back missed
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && (lowest == nil || bytes.Compare(k, lowest) < 0); k, v = c.Next() {
		id, _, err := openItem(in(bucket, pre, k), v, strict)
		if err != nil {
			continue
		}
		if _, seen := keys[string(id)]; want[string(id)] && !seen {
			found[string(id)] = bytes.Clone(k)
		}
	}
	maps.Copy(keys, found)
	return nil
}

// deletePrefix deletes every key of n under prefix.
func deletePrefix(n *bolt.Bucket, prefix []byte) error {
	var doomed [][]byte
	c := n.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		doomed = append(doomed, bytes.Clone(k))
	}
	for _, k := range doomed {
		if err := n.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
