package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// History keeps a session's rewind history (docs/rewind.md) through any
// Checkpointer, in two namespaces of the session's own thread, so that it
// is deleted with the session (DeleteSession removes every namespace) and
// every backend keeps it alike:
//
//   - HistoryNamespace, list "checkpoints": one opaque entry per prompt,
//     by its number (1-based); list "branches": what rewinds took out of
//     the conversation, so that a rewind can be undone.
//   - BlobNamespace, list "blobs": file contents by hash (their writer's
//     content hash), compressed with zstd; written once per session.
//
// Each write is a checkpoint of step 1, the first of a namespace in this
// process of step 0 (a step 0 starts a thread anew: a backend drops the
// writes it queued for it, so only the first may be one); neither is ever
// a gap (GapError), and each Put touches only the items it names.
type History struct {
	cp  Checkpointer
	enc *zstd.Encoder // EncodeAll/DecodeAll are safe for concurrent use
	dec *zstd.Decoder

	mu      sync.Mutex      // guards written
	written map[string]bool // the (session, namespace) pairs written in this process
}

// Namespaces of a session's thread that hold its history.
const (
	HistoryNamespace = "rewind"
	BlobNamespace    = "rewind.blobs"
)

// ErrPruned is wrapped by the error of a blob the history no longer holds.
var ErrPruned = errors.New("the content was pruned from the history")

// NewHistory returns the history kept in cp.
func NewHistory(cp Checkpointer) *History {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	return &History{cp: cp, enc: enc, dec: dec, written: map[string]bool{}}
}

// entryID is the list item ID of entry n: sortable as text.
func entryID(n int) string { return fmt.Sprintf("%08d", n) }

func (h *History) put(ctx context.Context, session, ns, list string, d Durability, ops ...Op) error {
	h.mu.Lock()
	step := 1
	if k := session + "\x00" + ns; !h.written[k] {
		step, h.written[k] = 0, true
	}
	h.mu.Unlock()
	if d == Exit {
		d = Batched // an exit-mode run's steps show only at its end; its history must show at once
	}
	// Running: the write ends no run, so a batched one does not wait for
	// its commit (d says when it reaches the disk).
	err := h.cp.Put(ctx, Checkpoint{Thread: session, Namespace: ns, Step: step, Status: StatusRunning, Lists: map[string][]Op{list: ops}, Durability: d})
	if err != nil {
		return fmt.Errorf("history of %s: %w", session, err)
	}
	return nil
}

// PutEntry stores (or replaces) entry n of session.
func (h *History) PutEntry(ctx context.Context, session string, n int, body json.RawMessage, d Durability) error {
	return h.put(ctx, session, HistoryNamespace, "checkpoints", d, Op{Kind: OpUpsert, ID: entryID(n), Body: body})
}

// Entries returns session's entries by number, from 1; none: nil.
func (h *History) Entries(ctx context.Context, session string) (map[int]json.RawMessage, error) {
	st, err := h.cp.Load(ctx, session, HistoryNamespace)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", session, err)
	}
	out := map[int]json.RawMessage{}
	for _, it := range st.Lists["checkpoints"] {
		var n int
		if _, err := fmt.Sscanf(it.ID, "%d", &n); err == nil && n > 0 {
			out[n] = it.Body
		}
	}
	return out, nil
}

// Numbers returns the keys of entries in order.
func Numbers(entries map[int]json.RawMessage) []int {
	out := make([]int, 0, len(entries))
	for n := range entries {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// DropEntries removes session's entries numbered from and later, keeping
// them as a branch (body describes it: what left the conversation).
func (h *History) DropEntries(ctx context.Context, session string, from int, branch string, body json.RawMessage, d Durability) error {
	entries, err := h.Entries(ctx, session)
	if err != nil {
		return err
	}
	var ops []Op
	for _, n := range Numbers(entries) {
		if n >= from {
			ops = append(ops, Op{Kind: OpRemove, ID: entryID(n)})
		}
	}
	if err := h.put(ctx, session, HistoryNamespace, "branches", d, Op{Kind: OpUpsert, ID: branch, Body: body}); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	return h.put(ctx, session, HistoryNamespace, "checkpoints", d, ops...)
}

// Branches returns what session's rewinds took out, by branch ID.
func (h *History) Branches(ctx context.Context, session string) (map[string]json.RawMessage, error) {
	st, err := h.cp.Load(ctx, session, HistoryNamespace)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", session, err)
	}
	out := map[string]json.RawMessage{}
	for _, it := range st.Lists["branches"] {
		out[it.ID] = it.Body
	}
	return out, nil
}

// PutBlob stores content under hash (the caller's hash of it).
func (h *History) PutBlob(ctx context.Context, session, hash string, content []byte, d Durability) error {
	body, err := json.Marshal(h.enc.EncodeAll(content, nil)) // base64 of the zstd frame
	if err != nil {
		return err
	}
	return h.put(ctx, session, BlobNamespace, "blobs", d, Op{Kind: OpUpsert, ID: hash, Body: body})
}

// DeleteBlobs removes the blobs of hashes (a size cap pruning the oldest).
func (h *History) DeleteBlobs(ctx context.Context, session string, hashes []string, d Durability) error {
	if len(hashes) == 0 {
		return nil
	}
	ops := make([]Op, len(hashes))
	for i, k := range hashes {
		ops[i] = Op{Kind: OpRemove, ID: k}
	}
	return h.put(ctx, session, BlobNamespace, "blobs", d, ops...)
}

// Blobs are a session's stored file contents, compressed, by hash.
type Blobs struct {
	h   *History
	raw map[string]json.RawMessage
}

// LoadBlobs reads session's blobs (their compressed form; Get decompresses one).
func (h *History) LoadBlobs(ctx context.Context, session string) (*Blobs, error) {
	b := &Blobs{h: h, raw: map[string]json.RawMessage{}}
	st, err := h.cp.Load(ctx, session, BlobNamespace)
	if errors.Is(err, ErrNotFound) {
		return b, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", session, err)
	}
	for _, it := range st.Lists["blobs"] {
		b.raw[it.ID] = it.Body
	}
	return b, nil
}

// Has reports whether hash is held.
func (b *Blobs) Has(hash string) bool { _, ok := b.raw[hash]; return ok }

// Size is the stored (compressed) size of hash's blob, 0 when absent.
func (b *Blobs) Size(hash string) int { return len(b.raw[hash]) }

// Get returns hash's content, or an error wrapping ErrPruned.
func (b *Blobs) Get(hash string) ([]byte, error) {
	raw, ok := b.raw[hash]
	if !ok {
		return nil, fmt.Errorf("content %s: %w", hash, ErrPruned)
	}
	var z []byte
	if err := json.Unmarshal(raw, &z); err != nil {
		return nil, fmt.Errorf("content %s: %w: %v", hash, ErrDamaged, err)
	}
	out, err := b.h.dec.DecodeAll(z, nil)
	if err != nil {
		return nil, fmt.Errorf("content %s: %w: %v", hash, ErrDamaged, err)
	}
	return out, nil
}
