//go:build unix

package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
)

// BenchmarkCheckpointHistory measures what the rewind history costs, in a
// bbolt store at the default (batched) durability, in a project of 10,000
// files:
//   - per-prompt: recording a prompt's checkpoint and its run's changes of
//     3 files (each edited twice), reported as ms/prompt;
//   - load: loading a session's transcript with 200 checkpoints in its
//     history, reported as a ratio to the same session without history
//     (load-ratio; 1.0 is free).
//
// Files changed by commands are not scanned (not built yet), so there is no
// command-scan figure.
func BenchmarkCheckpointHistory(b *testing.B) {
	db, err := store.Open(filepath.Join(b.TempDir(), "s.db"), store.WithDefaultDurability(store.Batched))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	h := newHarness(b, scripted.Script{}, Config{Store: db})
	root := h.roots["sample"]
	for i := range 10000 {
		dir := filepath.Join(root, "pkg", fmt.Sprint(i/100))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", i)), []byte("package p\n"), 0o644)
	}
	text := strings.Repeat("func f() { return }\n", 200) // a 4 KB file
	ctx := context.Background()
	b.Run("per-prompt", func(b *testing.B) {
		rec := h.rt.newHistoryRecorder("s-bench", "")
		start := time.Now()
		for i := range b.N {
			rec.begin(ctx, fmt.Sprintf("prompt %d", i), message.NewID(), "m")
			for f := range 3 {
				path := filepath.Join(root, "pkg", "0", fmt.Sprintf("f%d.go", f))
				v1 := fmt.Sprintf("%s// %d\n", text, i)
				rec.edit(ctx, path, text, v1, false)
				rec.edit(ctx, path, v1, v1+"// more\n", false)
			}
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/prompt")
	})
	b.Run("load", func(b *testing.B) {
		for _, id := range []string{"s-plain", "s-history"} {
			msgs := make([]store.Op, 400)
			for i := range msgs {
				msgs[i] = store.Op{Kind: store.OpAppend, ID: message.NewID(), Body: []byte(`{"role":"human","content":"` + strings.Repeat("x", 500) + `"}`)}
			}
			if err := db.Put(ctx, store.Checkpoint{Thread: id, Step: 0, Status: store.StatusDone, Lists: map[string][]store.Op{"messages": msgs},
				Index: &store.Session{ID: id, Project: "sample", Status: store.StatusDone}, Durability: store.Sync}); err != nil {
				b.Fatal(err)
			}
		}
		rec := h.rt.newHistoryRecorder("s-history", "")
		for i := range 200 {
			rec.begin(ctx, fmt.Sprintf("prompt %d", i), message.NewID(), "m")
			rec.edit(ctx, filepath.Join(root, "greet.go"), text, fmt.Sprintf("%s// %d\n", text, i), false)
		}
		db.Flush()
		load := func(id string) time.Duration {
			start := time.Now()
			if _, err := h.rt.Transcript(ctx, id, ""); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
		var plain, hist time.Duration
		for range b.N { // interleaved, so both see the same machine
			plain += load("s-plain")
			hist += load("s-history")
		}
		b.ReportMetric(float64(hist)/float64(plain), "load-ratio")
	})
}
