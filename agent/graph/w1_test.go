package graph_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	. "github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/store/postgres"
)

// w1Text is the 1 KB message texts W1 rotates through: this repository's
// own source (realistic: code and prose compress as they do in real
// sessions), or random base64 (the incompressible case).
func w1Text(b testing.TB, kind string) []string {
	var corpus []byte
	switch kind {
	case "source":
		files, _ := filepath.Glob("../../agent/*.go")
		more, _ := filepath.Glob("../../server/*.go")
		for _, f := range append(files, more...) {
			if data, err := os.ReadFile(f); err == nil {
				corpus = append(corpus, data...)
			}
		}
	case "random":
		raw := make([]byte, 192<<10)
		rand.Read(raw)
		corpus = []byte(base64.StdEncoding.EncodeToString(raw))
	}
	if len(corpus) < 64<<10 {
		b.Fatalf("W1 corpus %q: only %d bytes", kind, len(corpus))
	}
	var texts []string
	for i := 0; i+1000 <= len(corpus) && len(texts) < 256; i += 1000 {
		texts = append(texts, string(corpus[i:i+1000]))
	}
	return texts
}

// writeBytes is this process's bytes written to storage so far
// (/proc/self/io write_bytes), -1 where it cannot be read.
func writeBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// These tests and benchmarks drive the kernel with the agent's real messages
// channel, so they live in the external test package.

// w1Graph is workload W1: an agent/tools loop of turns tool turns and a final answer.
func w1Graph(b testing.TB, s *Schema, msgs message.Channel, turns int) *Graph {
	return w1GraphOf(b, s, msgs, turns, w1Text(b, "source"))
}

// w1GraphOf is W1 with messages rotating through texts.
func w1GraphOf(b testing.TB, s *Schema, msgs message.Channel, turns int, texts []string) *Graph {
	text := func(i int) string { return texts[i%len(texts)] }
	g, err := New(s).
		Node("agent", func(ctx context.Context, s State) (Patch, error) {
			i := (len(msgs.Get(s)) + 1) / 2 // input, then an AI and a tool message per turn
			if i > turns {
				return NewPatch(msgs.Append(message.NewAI(text(2 * i)))), nil
			}
			return NewPatch(msgs.Append(message.NewAI(text(2*i), message.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "echo", Args: fmt.Sprintf(`{"i": %d}`, i)}))), nil
		}).
		Node("tools", func(ctx context.Context, s State) (Patch, error) {
			all := msgs.Get(s)
			call := all[len(all)-1].ToolCalls[0]
			return NewPatch(msgs.Append(message.NewTool(call.ID, text(len(all))))), nil
		}).
		Edge(Start, "agent").
		Branch("agent", func(s State) []Route {
			all := msgs.Get(s)
			if len(all[len(all)-1].ToolCalls) > 0 {
				return []Route{To("tools")}
			}
			return []Route{To(End)}
		}).
		Edge("tools", "agent").Compile()
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// stepTimer records the wall time of each step through the event callback.
type stepTimer struct {
	last  time.Time
	times []time.Duration
}

func (st *stepTimer) event(e Event) {
	switch e.Type {
	case StepStart:
		st.last = time.Now()
	case StepEnd:
		if !st.last.IsZero() {
			st.times = append(st.times, time.Since(st.last))
		}
	}
}

// lateEarly is the median step time of the last 10% of steps over that of
// the first 10%: how a typical step's cost grows with the history. The
// final step is left out: it carries the run-end flush, a fixed cost per run
// in the batched and exit modes. Medians, not means: in batched mode a step
// that finds BatchSteps steps queued waits for the commit in flight (every
// 64 steps when steps come this fast, 0.4-2 ms of fdatasync each here),
// whatever the history's size, and whether two or three of those fell in a
// stretch of 200 steps moved a ratio of means between 1.0 and 1.8.
func lateEarly(times []time.Duration) float64 {
	if len(times) > 1 {
		times = times[:len(times)-1]
	}
	n := len(times) / 10
	if n == 0 {
		return 1
	}
	return float64(median(times[len(times)-n:])) / float64(median(times[:n]))
}

// median returns the median of ts, which it leaves as it was.
func median(ts []time.Duration) time.Duration {
	c := slices.Clone(ts)
	slices.Sort(c)
	return c[len(c)/2]
}

// BenchmarkAgentLoop is W1: an agent loop of 1 KB messages (this
// repository's source, rotated; text=random: incompressible) on each store.
// bytes/message is the store's data (its pages in use) per message; disk-bytes/step what
// the process wrote to storage per step (/proc/self/io).
//
// With AGENT_LSP_TEST_POSTGRES set (scripts/postgres.sh starts a local
// cluster), it also runs on PostgreSQL, in a schema of its own; its log
// gives the server's fsync and synchronous_commit, and bytes/message is
// the size of the schema's tables and indexes.
func BenchmarkAgentLoop(b *testing.B) {
	kinds := []string{"none", "memory", "bbolt/durability=sync", "bbolt/durability=batched", "bbolt/durability=exit", "bbolt/durability=batched/text=random"}
	if os.Getenv(postgresEnv) != "" {
		kinds = append(kinds, "postgres/durability=sync", "postgres/durability=batched")
	}
	for _, turns := range []int{10, 100, 1000} {
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("turns=%d/store=%s", turns, kind), func(b *testing.B) {
				s := NewSchema()
				msgs := message.NewChannel(s, "messages")
				kind, textKind := kind, "source"
				if k, ok := strings.CutSuffix(kind, "/text=random"); ok {
					kind, textKind = k, "random"
				}
				g := w1GraphOf(b, s, msgs, turns, w1Text(b, textKind))
				var cp store.Checkpointer
				var path string
				var pgSize func() int64
				switch {
				case kind == "none":
				case kind == "memory":
					cp = store.NewMemory()
				case strings.HasPrefix(kind, "postgres/"):
					var db *postgres.Store
					db, pgSize = openPostgres(b, store.Durability(strings.TrimPrefix(kind, "postgres/durability=")))
					cp = db
				default:
					path = b.TempDir() + "/w1.db"
					db, err := store.Open(path, store.WithDefaultDurability(store.Durability(strings.TrimPrefix(kind, "bbolt/durability="))))
					if err != nil {
						b.Fatal(err)
					}
					defer db.Close()
					cp = db
				}
				var steps int
				var ratio float64
				written := writeBytes()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					timer := &stepTimer{}
					res, err := g.Invoke(context.Background(), Config{Thread: fmt.Sprintf("w1-%d", i), Checkpointer: cp, StepLimit: 2*turns + 2, Events: timer.event},
						NewPatch(msgs.Append(message.NewHuman("go"))))
					if err != nil || res.Status != StatusDone {
						b.Fatalf("%s %v", res.Status, err)
					}
					steps += res.Steps
					ratio += lateEarly(timer.times)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
				b.ReportMetric(ratio/float64(b.N), "late/early")
				if pgSize != nil {
					b.ReportMetric(float64(pgSize())/float64(b.N*(2*turns+2)), "bytes/message")
				}
				if path != "" {
					used, _, err := cp.(*store.Bolt).Sizes()
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(used)/float64(b.N*(2*turns+2)), "bytes/message")
					if after := writeBytes(); written >= 0 && after >= 0 {
						b.ReportMetric(float64(after-written)/float64(steps), "disk-bytes/step")
					}
				}
			})
		}
	}
}

const postgresEnv = "AGENT_LSP_TEST_POSTGRES"

// openPostgres opens a PostgreSQL store in a new schema of the server at
// $AGENT_LSP_TEST_POSTGRES (dropped when b ends), logs the server's
// durability settings, and returns the store and a function that measures
// the schema's tables and indexes.
func openPostgres(b *testing.B, d store.Durability) (*postgres.Store, func() int64) {
	base := os.Getenv(postgresEnv)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		b.Fatalf("%s: %v", postgres.Redact(base), err)
	}
	b.Cleanup(func() { admin.Close(ctx) })
	var version, fsync, syncCommit string
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')").Scan(&version, &fsync, &syncCommit); err != nil {
		b.Fatal(err)
	}
	b.Logf("PostgreSQL %s: fsync=%s synchronous_commit=%s", version, fsync, syncCommit)
	schema := fmt.Sprintf("agent_lsp_w1_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := postgres.Open(ctx, u.String(), postgres.WithDefaultDurability(d))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	size := func() int64 {
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
		var n int64
		if err := admin.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	return db, size
}

// BenchmarkCommitFloor is the cost of one empty durable bbolt commit on the
// same kind of file: the floor under a durable checkpoint.
func BenchmarkCommitFloor(b *testing.B) {
	db, err := store.Open(b.TempDir()+"/floor.db", store.WithDefaultDurability(store.Sync))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < b.N; i++ {
		if err := db.Put(context.Background(), store.Checkpoint{Thread: "floor", Step: i, Status: StatusRunning}); err != nil {
			b.Fatal(err)
		}
	}
}

// runConcurrent runs n W1 sessions of turns turns at once on db and returns
// the steps they took.
func runConcurrent(t testing.TB, db *store.Bolt, n, turns int) int {
	s := NewSchema()
	msgs := message.NewChannel(s, "messages")
	return runConcurrentOn(t, db, w1Graph(t, s, msgs, turns), msgs, "s", n, turns)
}

// runConcurrentOn is runConcurrent with a W1 graph already built (the
// benchmark builds it once: reading its corpus is not a step's cost), on
// the threads prefix0, prefix1, ... (a finished thread would resume done
// at once: a benchmark gives each run its own).
func runConcurrentOn(t testing.TB, db *store.Bolt, g *Graph, msgs message.Channel, prefix string, n, turns int) int {
	var wg sync.WaitGroup
	steps := make([]int, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := g.Invoke(context.Background(), Config{Thread: fmt.Sprint(prefix, i), Checkpointer: db, StepLimit: 2*turns + 2},
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
			s := NewSchema()
			msgs := message.NewChannel(s, "messages")
			g := w1Graph(b, s, msgs, 50)
			steps := 0
			before := db.Commits()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				steps += runConcurrentOn(b, db, g, msgs, fmt.Sprintf("run%d-", i), 16, 50)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
			b.ReportMetric(float64(db.Commits()-before)/float64(steps), "commits/step")
		})
	}
}
