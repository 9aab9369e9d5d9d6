package graph

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
)

// runConcurrent runs n W1 sessions of turns turns at once on db and returns
// the steps they took.
func runConcurrent(t testing.TB, db *store.Bolt, n, turns int) int {
	s := NewSchema()
	msgs := NewMessages(s, "messages")
	g := w1Graph(t, s, msgs, turns)
	var wg sync.WaitGroup
	steps := make([]int, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := g.Invoke(context.Background(), Config{Thread: fmt.Sprint("s", i), Checkpointer: db, StepLimit: 2*turns + 2},
				NewPatch(msgs.Append(message.NewHuman("go"))))
			steps[i], errs[i] = res.Steps+1, err
		}()
	}
	wg.Wait()
	total := 0
	for i := range steps {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		total += steps[i]
	}
	return total
}

// TestGroupCommitSync runs 16 sessions at once in sync mode: every checkpoint
// is durable, and they share commits.
func TestGroupCommitSync(t *testing.T) {
	path := t.TempDir() + "/g.db"
	db, err := store.Open(path, store.WithDefaultDurability(store.Sync))
	if err != nil {
		t.Fatal(err)
	}
	before := db.Commits()
	steps := runConcurrent(t, db, 16, 30)
	commits := db.Commits() - before
	if ratio := float64(commits) / float64(steps); ratio >= 1 {
		t.Fatalf("%d commits for %d steps: group commit did not share commits", commits, steps)
	}
	t.Logf("%d commits for %d steps", commits, steps)
	// Everything is durable: a fresh open (after close) sees every session complete.
	db.Close()
	db, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 16; i++ {
		st, err := db.Load(context.Background(), fmt.Sprint("s", i), "")
		if err != nil || st.Status != StatusDone || len(st.Lists["messages"]) != 62 {
			t.Fatalf("session %d: %+v %v", i, st, err)
		}
	}
}

func BenchmarkConcurrentSessions(b *testing.B) {
	for _, d := range []store.Durability{store.Sync, store.Batched} {
		b.Run(fmt.Sprintf("sessions=16/durability=%s", d), func(b *testing.B) {
			db, err := store.Open(b.TempDir()+"/c.db", store.WithDefaultDurability(d))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			steps := 0
			before := db.Commits()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				steps += runConcurrent(b, db, 16, 50)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
			b.ReportMetric(float64(db.Commits()-before)/float64(steps), "commits/step")
		})
	}
}
