//go:build unix

package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
)

// BenchmarkCheckpointHistory measures what the rewind history costs, in a
// bbolt store at the default (batched) durability, in a project of 10,000
// files:
//   - per-prompt: recording a prompt's checkpoint and its run's changes of
//     3 files (each edited twice), reported as ms/prompt;
//   - load: loading a session's transcript with 200 checkpoints in its
//     history, reported as a ratio to the same session without history
//     (load-ratio, the median of interleaved pairs; 1.0 is free);
//   - command-scan: looking for the files a command changed (cmdscan.go)
//     in the same project, a git repository, when the command changes 3 of
//     them (one the history holds, one clean in git, one new), reported as
//     ms/command, apart from the per-prompt figure.
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
		ratios := make([]float64, 0, b.N)
		for range b.N { // interleaved pairs, so both see the same machine; the median leaves out a pair another process slowed
			plain := load("s-plain")
			ratios = append(ratios, float64(load("s-history"))/float64(plain))
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "load-ratio")
	})
	b.Run("command-scan", func(b *testing.B) { benchCommandScan(b, h, root) })
}

// benchCommandScan measures the scan around one command in root (10,000
// files, made a git repository here) that changes 3 files.
func benchCommandScan(b *testing.B, h *harness, root string) {
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			b.Skipf("git %v: %v %s", args, err, out)
		}
	}
	ctx := context.Background()
	rec := h.rt.newHistoryRecorder("s-scan", "")
	rec.begin(ctx, "scan", message.NewID(), "m")
	known := filepath.Join(root, "greet.go")
	rec.edit(ctx, known, "", "package main\n", false)
	os.WriteFile(known, []byte("package main\n"), 0o644)
	round := time.Now().UnixNano() // the names and contents of this round's changes: new to the scan
	scan := func(i int) time.Duration {
		s := rec.commandWatch("sample")
		start := time.Now()
		s.port(func(context.Context, tools.Intent) error { return nil })(ctx, tools.Intent{Command: "bench"})
		took := time.Since(start)
		os.WriteFile(known, fmt.Appendf(nil, "package main\n// %d %d\n", round, i), 0o644)
		os.WriteFile(filepath.Join(root, "pkg", "1", "f100.go"), fmt.Appendf(nil, "package p\n// %d %d\n", round, i), 0o644)
		os.WriteFile(filepath.Join(root, fmt.Sprintf("new-%d-%d.txt", round, i)), []byte("new\n"), 0o644)
		start = time.Now()
		s.finish(ctx)
		return took + time.Since(start)
	}
	scan(-1) // opens the repository, once per run
	b.ResetTimer()
	var took time.Duration
	for i := range b.N {
		took += scan(i)
	}
	if len(rec.cur.Files) < 3 {
		b.Fatalf("the scan found %+v %v", rec.cur.Files, rec.cur.Notes)
	}
	b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/command")
}
