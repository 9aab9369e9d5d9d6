//go:build unix

package agent

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
)

// blobLoads is a store counting the loads of the history's contents
// (store.BlobNamespace): what counting a history's size reads.
type blobLoads struct {
	store.Store
	n atomic.Int64
}

func (s *blobLoads) Load(ctx context.Context, thread, namespace string) (*store.State, error) {
	if namespace == store.BlobNamespace {
		s.n.Add(1)
	}
	return s.Store.Load(ctx, thread, namespace)
}

// loads is how many times begin of a new run (its own recorder, as
// agent.run's are) of session on h loaded the contents.
func (s *blobLoads) loads(h *harness, session string, prompt int) (*historyRecorder, int64) {
	before := s.n.Load()
	rec := h.rt.newHistoryRecorder(session, "")
	rec.begin(context.Background(), fmt.Sprintf("prompt %d", prompt), message.NewID(), "m")
	return rec, s.n.Load() - before
}

// TestHistorySizeKnown: below the cap, a session's history is counted
// (its contents read) at its first run start in a runtime only; the next
// run's start reads no content. Another runtime on the same store (another
// daemon client) counts at its own first run.
func TestHistorySizeKnown(t *testing.T) {
	st := &blobLoads{Store: store.NewMemory()}
	h := newHarness(t, scripted.Script{}, Config{Store: st, MaxHistoryBytes: 1 << 20})
	ctx := context.Background()
	path := filepath.Join(h.roots["sample"], "greet.go")
	const session = "s-known"
	rec, n := st.loads(h, session, 1)
	if n != 1 {
		t.Fatalf("the first run start loaded the contents %d times, want 1 (the count)", n)
	}
	rec.edit(ctx, path, noise(4<<10), noise(4<<10), false)
	if _, n = st.loads(h, session, 2); n != 0 {
		t.Fatalf("the second run start, below the cap, loaded the contents %d times, want 0", n)
	}
	other := newHarness(t, scripted.Script{}, Config{Store: st, MaxHistoryBytes: 1 << 20})
	if _, n = st.loads(other, session, 3); n != 1 {
		t.Fatalf("another runtime's first run start loaded the contents %d times, want 1", n)
	}
}

// TestHistorySizeCrossed: what a runtime's run writes past the cap is
// pruned at the next run start of the session: the estimate crosses the
// cap, so that start counts and prunes, the oldest first.
func TestHistorySizeCrossed(t *testing.T) {
	const limit = 64 << 10
	st := &blobLoads{Store: store.NewMemory()}
	h := newHarness(t, scripted.Script{}, Config{Store: st, MaxHistoryBytes: limit})
	ctx := context.Background()
	const session = "s-crossed"
	root := h.roots["sample"]
	if err := h.store.PutSession(ctx, store.Session{ID: session, Project: "sample", Root: root, Status: store.StatusDone}); err != nil {
		t.Fatal(err)
	}
	rec, _ := st.loads(h, session, 1)
	for f := range 3 { // 6 contents of 30 KB that hardly compress: ~190 KB
		path := filepath.Join(root, fmt.Sprintf("f%d.go", f))
		rec.edit(ctx, path, noise(30<<10), noise(30<<10), false)
	}
	if u, err := h.rt.hist.Usage(ctx, session); err != nil || u.Total() <= limit {
		t.Fatalf("the first run's history: %d bytes, not over the cap of %d (%v)", u.Total(), limit, err)
	}
	_, n := st.loads(h, session, 2)
	if n == 0 {
		t.Fatal("the run start after a run that wrote past the cap did not count the history")
	}
	u, err := h.rt.hist.Usage(ctx, session)
	if err != nil || u.Total() > limit {
		t.Fatalf("history after the second run start: %d bytes over a cap of %d (%v)", u.Total(), limit, err)
	}
	cps, err := h.rt.Checkpoints(ctx, session)
	if err != nil || len(cps) != 2 {
		t.Fatalf("checkpoints: %d %v", len(cps), err)
	}
	blobs, _ := h.rt.hist.LoadBlobs(ctx, session)
	if ok, why := cps[0].Files[0].Restorable(blobs); ok || why != ReasonPruned {
		t.Fatalf("the first checkpoint's file after pruning: %v %s", ok, why)
	}
	if _, n = st.loads(h, session, 3); n != 0 {
		t.Fatalf("the run start after the pruning, below the cap, loaded the contents %d times, want 0", n)
	}
}

// TestBlobBound: a content's bound is at least what the store keeps of
// it, for text and for incompressible content.
func TestBlobBound(t *testing.T) {
	ctx := context.Background()
	h := &history{History: store.NewHistory(store.NewMemory())}
	random := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}
	for i, rnd := range [][]byte{nil, []byte("x"), random(100), []byte(noise(30 << 10)), make([]byte, 1<<20), random(30 << 10), random(300 << 10)} {
		session := fmt.Sprintf("s-%d", i)
		h.sizes.counting(session)
		if err := h.PutBlob(ctx, session, "h", rnd, ""); err != nil {
			t.Fatal(err)
		}
		u, err := h.Usage(ctx, session)
		if err != nil || u.Total() > blobBound(len(rnd)) {
			t.Fatalf("a content of %d bytes: stored %d bytes, over its bound %d (%v)", len(rnd), u.Total(), blobBound(len(rnd)), err)
		}
	}
}
