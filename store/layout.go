package store

import (
	"bytes"
	"fmt"
	"maps"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/layout"
	"github.com/agent-lsp/agent-lsp/store/internal/record"
)

// The writer of the layout (store/internal/layout): a step's list
// operations on a namespace's bucket.

// applyOps applies one step's operations on list to the namespace's
// bucket n.
//
// OpAppend and an ID-less OpUpsert append at the list's end without
// reading it. OpUpsert with an ID and OpRemove need the item with the ID:
// the list is read from its end back, once per call and only as far as
// needed (replacing a recent message reads a few items; removing old ones,
// as compaction does, reads the list once).
func applyOps(n *bolt.Bucket, bucket []byte, list string, ops []Op, strict bool) error {
	prefix := layout.ItemPrefix(list)
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
				key = layout.ItemKey(list, seq)
				if op.ID != "" && want[op.ID] {
					keys[op.ID] = key
				}
			}
			if err := n.Put(key, layout.SealItem(bucket, key, op.ID, op.Body, strict)); err != nil {
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
	pre := record.BucketSum(bucket)
	c := n.Cursor()
	// The key after the range: prefix with its last byte (0) raised by one.
	end := append(bytes.Clone(prefix[:len(prefix)-1]), 1)
	var k, v []byte
	if k, _ = c.Seek(end); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	var lowest []byte // the lowest key the walk back read
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		lowest = k
		id, _, err := layout.OpenItem(record.In(bucket, pre, k), v, strict)
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
		id, _, err := layout.OpenItem(record.In(bucket, pre, k), v, strict)
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
