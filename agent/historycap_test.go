//go:build unix

package agent

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
)

// noise is n bytes of text that does not compress much.
func noise(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// TestHistoryCap: with a cap of 64 KB, six runs of a prompt each writing
// a new 20 KB content to the same file keep the history within the cap as
// each run starts: the oldest checkpoints lose their contents first (their
// file is listed with ReasonPruned, and planning a rewind to them names it
// before anything changes), the newest stay restorable, and an entry whose
// content is still named by a later checkpoint keeps it.
func TestHistoryCap(t *testing.T) {
	const limit = 64 << 10
	h := newHarness(t, scripted.Script{}, Config{MaxHistoryBytes: limit})
	ctx := context.Background()
	root := h.roots["sample"]
	path := filepath.Join(root, "greet.go")
	const session = "s-cap"
	if err := h.store.PutSession(ctx, store.Session{ID: session, Project: "sample", Root: root, Status: store.StatusDone}); err != nil {
		t.Fatal(err)
	}
	text := noise(20 << 10)
	for i := range 6 {
		rec := h.rt.newHistoryRecorder(session, "") // each prompt its own run, as agent.run's are
		rec.begin(ctx, fmt.Sprintf("prompt %d", i+1), message.NewID(), "m")
		if u, err := h.rt.hist.Usage(ctx, session); err != nil || u.Total() > limit {
			t.Fatalf("history at prompt %d: %d bytes over a cap of %d (%v)", i+1, u.Total(), limit, err)
		}
		next := noise(20 << 10)
		rec.edit(ctx, path, text, next, false)
		text = next
	}
	cps, err := h.rt.Checkpoints(ctx, session)
	if err != nil || len(cps) != 6 {
		t.Fatalf("checkpoints: %d %v", len(cps), err)
	}
	blobs, _ := h.rt.hist.LoadBlobs(ctx, session)
	var reasons []string
	for _, c := range cps {
		ok, why := c.Files[0].Restorable(blobs)
		reasons = append(reasons, fmt.Sprintf("%d:%v:%s", c.N, ok, why))
	}
	if ok, why := cps[0].Files[0].Restorable(blobs); ok || why != ReasonPruned {
		t.Fatalf("the oldest checkpoint after pruning: %v", reasons)
	}
	if ok, _ := cps[5].Files[0].Restorable(blobs); !ok {
		t.Fatalf("the newest checkpoint was pruned: %v", reasons)
	}
	_, err = h.rt.PlanRewind(ctx, session, 1)
	if err == nil || !strings.Contains(err.Error(), "greet.go") || !strings.Contains(err.Error(), ReasonPruned) {
		t.Fatalf("planning a rewind to a pruned checkpoint: %v", err)
	}
	plan, err := h.rt.PlanRewind(ctx, session, 6)
	if err != nil || len(plan) != 1 || plan[0].Reason != "" {
		t.Fatalf("planning a rewind to the newest checkpoint: %+v %v", plan, err)
	}
	if _, err := blobs.Get(cps[0].Files[0].Before); !errors.Is(err, store.ErrPruned) {
		t.Fatalf("the oldest content: %v", err)
	}
}

// TestHistoryNoCap: a cap of 0 keeps everything.
func TestHistoryNoCap(t *testing.T) {
	h := newHarness(t, scripted.Script{}, Config{})
	ctx := context.Background()
	path := filepath.Join(h.roots["sample"], "greet.go")
	rec := h.rt.newHistoryRecorder("s-nocap", "")
	text := noise(20 << 10)
	for i := range 6 {
		rec.begin(ctx, fmt.Sprintf("prompt %d", i+1), message.NewID(), "m")
		next := noise(20 << 10)
		rec.edit(ctx, path, text, next, false)
		text = next
	}
	blobs, _ := h.rt.hist.LoadBlobs(ctx, "s-nocap")
	cps, _ := LoadCheckpoints(ctx, h.rt.hist.History, "s-nocap")
	for _, c := range cps {
		if ok, why := c.Files[0].Restorable(blobs); !ok {
			t.Fatalf("checkpoint %d without a cap: %s", c.N, why)
		}
	}
}
