package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkOpen is the cost of Open's check of a store file before bbolt
// maps it (every page read and checked), on a store of 40 sessions of 1,000
// messages of 1 KB of this repository's source: ms/open, and the ratio to
// bbolt's own open of the same file (which reads only its meta pages).
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.db")
	db, err := Open(path, WithDefaultDurability(Exit))
	if err != nil {
		b.Fatal(err)
	}
	texts := w1Corpus(&testing.T{})
	ctx := context.Background()
	for s := 0; s < 40; s++ {
		for i := 0; i < 1000; i++ {
			body, _ := json.Marshal(map[string]string{"id": fmt.Sprint("m", i), "content": texts[(s+i)%len(texts)]})
			status := StatusRunning
			if i == 999 {
				status = StatusDone
			}
			db.Put(ctx, Checkpoint{Thread: fmt.Sprint("s", s), Step: i, Status: status, Lists: map[string][]Op{"messages": {{Kind: OpAppend, ID: fmt.Sprint("m", i), Body: body}}}})
		}
	}
	used, file, _ := db.Sizes()
	db.Close()

	b.ResetTimer()
	var ours, theirs time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		raw, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		raw.Close()
		theirs += time.Since(start)
		start = time.Now()
		db, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
		ours += time.Since(start)
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "ms/open")
	b.ReportMetric(float64(used)/(1<<20), "MiB-used")
	b.ReportMetric(float64(file)/(1<<20), "MiB-file")
	b.ReportMetric(float64(ours)/float64(theirs), "ratio-to-bbolt-open")
}
