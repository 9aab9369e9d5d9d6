//go:build unix

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// checksumPair is two stores alike but for their records' seals: sealed
// (format 4) and not (strict off: written and read as format 3 did).
func checksumPair(b *testing.B, d Durability) (sealed, plain *Bolt) {
	b.Helper()
	open := func(name string) *Bolt {
		db, err := Open(filepath.Join(b.TempDir(), name), WithDefaultDurability(d))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
	sealed, plain = open("sealed.db"), open("plain.db")
	plain.strict = false
	return sealed, plain
}

// w1Messages returns n messages of 1 KB of this repository's source, as
// W1's are.
func w1Messages(b *testing.B, n int) []json.RawMessage {
	texts := w1Corpus(&testing.T{})
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i], _ = json.Marshal(map[string]string{"id": fmt.Sprintf("01JMSG%06d", i), "role": "ai", "content": texts[i%len(texts)]})
	}
	return out
}

// BenchmarkChecksum is what sealing every record costs, as the ratio of the
// sealed store's cost to the same work on a store that does not seal
// (format 3's records), the two interleaved in each iteration, medians of
// the iterations (a burst of garbage collection or of another goroutine
// lands in one run, not in the figure). Costs are
// the process's CPU time (user and system, every goroutine: the committer's
// too), which other processes on a loaded machine do not inflate as they do
// wall time:
//
//   - w1=batched: W1's checkpoints in batched mode, a run of 200 steps that
//     each append a 1 KB message and move the head, to its durable end:
//     CPU ns/step of each store, and sealed/plain.
//   - load=10000: loading a session of 10,000 such messages: CPU ms/load of
//     each, and sealed/plain.
func BenchmarkChecksum(b *testing.B) {
	ctx := context.Background()
	b.Run("w1=batched", func(b *testing.B) {
		sealed, plain := checksumPair(b, Batched)
		msgs := w1Messages(b, 200)
		run := func(db *Bolt, thread string) time.Duration {
			start := cpuTime()
			for step, m := range msgs {
				status := StatusRunning
				if step == len(msgs)-1 {
					status = StatusDone
				}
				err := db.Put(ctx, Checkpoint{Thread: thread, Step: step, Status: status, Next: []Task{{ID: fmt.Sprint("t", step), Node: "agent"}},
					Lists: map[string][]Op{"messages": {{Kind: OpAppend, ID: fmt.Sprintf("01JMSG%06d", step), Body: m}}}})
				if err != nil {
					b.Fatal(err)
				}
			}
			return cpuTime() - start
		}
		ts, tp := make([]time.Duration, b.N), make([]time.Duration, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%2 == 0 {
				ts[i] = run(sealed, fmt.Sprint("w1-", i))
				tp[i] = run(plain, fmt.Sprint("w1-", i))
			} else {
				tp[i] = run(plain, fmt.Sprint("w1-", i))
				ts[i] = run(sealed, fmt.Sprint("w1-", i))
			}
		}
		steps := float64(len(msgs))
		b.ReportMetric(float64(medianOf(ts).Nanoseconds())/steps, "sealed-cpu-ns/step")
		b.ReportMetric(float64(medianOf(tp).Nanoseconds())/steps, "plain-cpu-ns/step")
		b.ReportMetric(float64(medianOf(ts))/float64(medianOf(tp)), "sealed/plain")
	})
	b.Run("load=10000", func(b *testing.B) {
		sealed, plain := checksumPair(b, Sync)
		msgs := w1Messages(b, 10000)
		for _, db := range []*Bolt{sealed, plain} {
			for from := 0; from < len(msgs); from += 500 {
				var ops []Op
				for i := from; i < from+500; i++ {
					ops = append(ops, Op{Kind: OpAppend, ID: fmt.Sprintf("01JMSG%06d", i), Body: msgs[i]})
				}
				if err := db.Put(ctx, Checkpoint{Thread: "long", Step: from, Status: StatusDone, Lists: map[string][]Op{"messages": ops}}); err != nil {
					b.Fatal(err)
				}
			}
		}
		load := func(db *Bolt) time.Duration {
			start := cpuTime()
			st, err := db.Load(ctx, "long", "")
			if err != nil || len(st.Lists["messages"]) != len(msgs) {
				b.Fatalf("load: %v", err)
			}
			return cpuTime() - start
		}
		ts, tp := make([]time.Duration, b.N), make([]time.Duration, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%2 == 0 {
				ts[i] = load(sealed)
				tp[i] = load(plain)
			} else {
				tp[i] = load(plain)
				ts[i] = load(sealed)
			}
		}
		b.ReportMetric(float64(medianOf(ts).Microseconds())/1000, "sealed-cpu-ms/load")
		b.ReportMetric(float64(medianOf(tp).Microseconds())/1000, "plain-cpu-ms/load")
		b.ReportMetric(float64(medianOf(ts))/float64(medianOf(tp)), "sealed/plain")
	})
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// medianOf returns the median of ds (which it sorts).
func medianOf(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
