package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// HistoryUsage is what a session's rewind history holds, in stored bytes
// (each item's body as the store keeps it, exactly: bytea on PostgreSQL,
// the record's own bytes in bbolt and memory), by item. It is counted from
// the items themselves, never kept as a running total, so it is right
// after any crash (what a kill -9 lost is not counted) and the same on
// every backend for the same writes.
type HistoryUsage struct {
	Entries  map[int]int    // by entry number
	Branches map[string]int // by branch ID
	Blobs    map[string]int // by hash (compressed, as stored)
}

// Total is the history's size in bytes.
func (u HistoryUsage) Total() int64 {
	var n int64
	for _, s := range u.Entries {
		n += int64(s)
	}
	for _, s := range u.Branches {
		n += int64(s)
	}
	for _, s := range u.Blobs {
		n += int64(s)
	}
	return n
}

// Usage counts session's history: its entries, branches and blobs.
func (h *History) Usage(ctx context.Context, session string) (HistoryUsage, error) {
	u := HistoryUsage{Entries: map[int]int{}, Branches: map[string]int{}, Blobs: map[string]int{}}
	for _, ns := range []string{HistoryNamespace, BlobNamespace} {
		st, err := h.cp.Load(ctx, session, ns)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return HistoryUsage{}, fmt.Errorf("history of %s: %w", session, err)
		}
		for _, it := range st.Lists["checkpoints"] {
			var n int
			if _, err := fmt.Sscanf(it.ID, "%d", &n); err == nil && n > 0 {
				u.Entries[n] = len(it.Body)
			}
		}
		for _, it := range st.Lists["branches"] {
			u.Branches[it.ID] = len(it.Body)
		}
		for _, it := range st.Lists["blobs"] {
			u.Blobs[it.ID] = len(it.Body)
		}
	}
	return u, nil
}

// DeleteBranches removes session's branches of ids (a size cap pruning
// the oldest, an undone rewind).
func (h *History) DeleteBranches(ctx context.Context, session string, ids []string, d Durability) error {
	if len(ids) == 0 {
		return nil
	}
	ops := make([]Op, len(ids))
	for i, id := range ids {
		ops[i] = Op{Kind: OpRemove, ID: id}
	}
	return h.put(ctx, session, HistoryNamespace, "branches", d, ops...)
}

// PutBranch stores (or replaces) session's branch id.
func (h *History) PutBranch(ctx context.Context, session, id string, body []byte, d Durability) error {
	return h.put(ctx, session, HistoryNamespace, "branches", d, Op{Kind: OpUpsert, ID: id, Body: json.RawMessage(body)})
}

// DeleteEntries removes session's entries numbered ns (without a branch:
// a size cap pruning the oldest).
func (h *History) DeleteEntries(ctx context.Context, session string, ns []int, d Durability) error {
	if len(ns) == 0 {
		return nil
	}
	ops := make([]Op, len(ns))
	for i, n := range ns {
		ops[i] = Op{Kind: OpRemove, ID: entryID(n)}
	}
	return h.put(ctx, session, HistoryNamespace, "checkpoints", d, ops...)
}
