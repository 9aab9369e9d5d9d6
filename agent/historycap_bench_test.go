//go:build unix

package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
)

// BenchmarkHistoryCap measures what the size cap costs a run: starting
// a run's first checkpoint (and recording its change of 3 files) in a
// session whose history already holds 200 such prompts, in a bbolt store
// at the default (batched) durability, with the cap on (256 MB, not
// reached: counted from the store at the session's first run here, then
// known from what this runtime wrote since, historysize.go) and off,
// interleaved. Reported: ms/prompt with the cap, and cap-ratio,
// its time over the time without (1.0 is free).
func BenchmarkHistoryCap(b *testing.B) {
	db, err := store.Open(filepath.Join(b.TempDir(), "s.db"), store.WithDefaultDurability(store.Batched))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	capped := newHarness(b, scripted.Script{}, Config{Store: db, MaxHistoryBytes: 256 << 20})
	plain := newHarness(b, scripted.Script{}, Config{Store: db})
	ctx := context.Background()
	text := strings.Repeat("func f() { return }\n", 200) // a 4 KB file
	prompt := func(h *harness, i int) time.Duration {
		start := time.Now()
		rec := h.rt.newHistoryRecorder(fmt.Sprintf("s-%p", h), "") // each prompt its own run
		rec.begin(ctx, fmt.Sprintf("prompt %d", i), message.NewID(), "m")
		for f := range 3 {
			path := filepath.Join(h.roots["sample"], fmt.Sprintf("f%d.go", f))
			rec.edit(ctx, path, text, fmt.Sprintf("%s// %d %d\n", text, i, f), false)
		}
		return time.Since(start)
	}
	for _, h := range []*harness{capped, plain} {
		for i := range 200 {
			prompt(h, i)
		}
	}
	var withCap, without time.Duration
	for i := range b.N {
		withCap += prompt(capped, 200+i)
		without += prompt(plain, 200+i)
	}
	b.ReportMetric(float64(withCap.Microseconds())/1000/float64(b.N), "ms/prompt")
	b.ReportMetric(float64(withCap)/float64(without), "cap-ratio")
}
