package graph

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/store"
)

type testSchema struct {
	*Schema
	msgs  keyed
	items List[int]
	count Value[int]
	note  Value[string]
}

func newTestSchema() testSchema {
	s := NewSchema()
	return testSchema{s, newKeyed(s, "messages"), NewList[int](s, "items"), NewValue[int](s, "count"), NewValue[string](s, "note")}
}

func msg(id, content string) tmsg {
	return tmsg{ID: id, Role: "human", Content: content}
}

func TestReducers(t *testing.T) {
	ts := newTestSchema()
	other := NewSchema()
	stranger := NewValue[int](other, "stranger")
	tests := []struct {
		name      string
		steps     [][]Patch // each step's patches, applied in order
		wantMsgs  []string
		wantItems []int
		wantCount int
		wantErr   string
	}{
		{name: "last value set", steps: [][]Patch{{NewPatch(ts.count.Set(3))}, {NewPatch(ts.count.Set(5))}}, wantCount: 5},
		{name: "append concatenates across patches", steps: [][]Patch{{NewPatch(ts.items.Append(1, 2)), NewPatch(ts.items.Append(3))}}, wantItems: []int{1, 2, 3}},
		{name: "append reset empties", steps: [][]Patch{{NewPatch(ts.items.Append(1))}, {NewPatch(ts.items.Reset(), ts.items.Append(9))}}, wantItems: []int{9}},
		{name: "messages append", steps: [][]Patch{{NewPatch(ts.msgs.Append(msg("a", "1"), msg("b", "2")))}}, wantMsgs: []string{"a:1", "b:2"}},
		{name: "messages same id replaces in place", steps: [][]Patch{{NewPatch(ts.msgs.Append(msg("a", "1"), msg("b", "2")))}, {NewPatch(ts.msgs.Append(msg("a", "x")))}}, wantMsgs: []string{"a:x", "b:2"}},
		{name: "messages remove by id", steps: [][]Patch{{NewPatch(ts.msgs.Append(msg("a", "1"), msg("b", "2")))}, {NewPatch(ts.msgs.Remove("a"))}}, wantMsgs: []string{"b:2"}},
		{name: "messages replace is remove-all then append", steps: [][]Patch{{NewPatch(ts.msgs.Append(msg("a", "1"), msg("b", "2")))}, {NewPatch(ts.msgs.Replace(msg("c", "3")))}}, wantMsgs: []string{"c:3"}},
		{name: "undeclared channel is named", steps: [][]Patch{{NewPatch(stranger.Set(1))}}, wantErr: `undeclared channel "stranger"`},
		{name: "zero key is refused", steps: [][]Patch{{NewPatch(Value[int]{}.Set(1))}}, wantErr: "undeclared channel"},
		{name: "double last-value write in a step names the channel", steps: [][]Patch{{NewPatch(ts.count.Set(1)), NewPatch(ts.count.Set(2))}}, wantErr: `channel "count" written twice`},
		{name: "double write within one patch", steps: [][]Patch{{NewPatch(ts.note.Set("a"), ts.note.Set("b"))}}, wantErr: `channel "note" written twice`},
		{name: "message without id", steps: [][]Patch{{NewPatch(ts.msgs.Append(tmsg{Role: "human"}))}}, wantErr: "no id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := map[string]any{}
			var err error
			for _, step := range tt.steps {
				if vals, _, err = ts.apply(vals, step); err != nil {
					break
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := State{vals: vals}
			var got []string
			for _, m := range ts.msgs.Get(s) {
				got = append(got, m.ID+":"+m.Content)
			}
			if !reflect.DeepEqual(got, tt.wantMsgs) {
				t.Errorf("messages = %v, want %v", got, tt.wantMsgs)
			}
			if items := ts.items.Get(s); len(items)+len(tt.wantItems) > 0 && !reflect.DeepEqual(items, tt.wantItems) {
				t.Errorf("items = %v, want %v", items, tt.wantItems)
			}
			if c := ts.count.Get(s); c != tt.wantCount {
				t.Errorf("count = %d, want %d", c, tt.wantCount)
			}
		})
	}
}

func TestPatchRoundTrip(t *testing.T) {
	ts := newTestSchema()
	p := NewPatch(ts.msgs.Append(msg("a", "1")), ts.msgs.Remove("z"), ts.items.Append(4, 5), ts.items.Reset(), ts.count.Set(7), ts.msgs.Replace(msg("b", "2")))
	raw, err := ts.encodePatch(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ts.decodePatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	v1, _, err1 := ts.apply(map[string]any{}, []Patch{p})
	v2, _, err2 := ts.apply(map[string]any{}, []Patch{back})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !reflect.DeepEqual(ts.msgs.Get(State{vals: v1}), ts.msgs.Get(State{vals: v2})) || ts.count.Get(State{vals: v2}) != 7 {
		t.Fatal("decoded patch applies differently")
	}
}

// counter builds a graph: inc adds 1 to count until it reaches n.
func counterGraph(t testing.TB, ts testSchema, n int) *Graph {
	g, err := New(ts.Schema).
		Node("inc", func(ctx context.Context, s State) (Patch, error) {
			c := ts.count.Get(s) + 1
			return NewPatch(ts.count.Set(c), ts.msgs.Append(tmsg{ID: fmt.Sprintf("m%d", c), Role: "ai", Content: fmt.Sprint(c)})), nil
		}).
		Edge(Start, "inc").
		Branch("inc", func(s State) []Route {
			if ts.count.Get(s) >= n {
				return []Route{To(End)}
			}
			return []Route{To("inc")}
		}).Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestConditionalRouting(t *testing.T) {
	ts := newTestSchema()
	var visited []string
	g, err := New(ts.Schema).
		Node("classify", func(ctx context.Context, s State) (Patch, error) {
			visited = append(visited, "classify")
			return NewPatch(), nil
		}).
		Node("small", func(ctx context.Context, s State) (Patch, error) {
			visited = append(visited, "small")
			return NewPatch(ts.note.Set("small")), nil
		}).
		Node("big", func(ctx context.Context, s State) (Patch, error) {
			visited = append(visited, "big")
			return NewPatch(ts.note.Set("big")), nil
		}).
		Edge(Start, "classify").
		Branch("classify", func(s State) []Route {
			if ts.count.Get(s) > 10 {
				return []Route{To("big")}
			}
			return []Route{To("small")}
		}).
		Edge("small", End).Edge("big", End).Compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		count int
		want  string
	}{{3, "small"}, {30, "big"}} {
		visited = nil
		res, err := g.Invoke(context.Background(), Config{}, NewPatch(ts.count.Set(tc.count)))
		if err != nil || res.Status != StatusDone {
			t.Fatalf("status %s, err %v", res.Status, err)
		}
		if got := ts.note.Get(res.State); got != tc.want {
			t.Errorf("count %d: note %q, want %q", tc.count, got, tc.want)
		}
		if !reflect.DeepEqual(visited, []string{"classify", tc.want}) || res.Steps != 2 {
			t.Errorf("visited %v in %d steps", visited, res.Steps)
		}
	}
}

func fanOutGraph(t testing.TB, ts testSchema, n int, work func(ctx context.Context, i int) error) *Graph {
	g, err := New(ts.Schema).
		Node("split", func(ctx context.Context, s State) (Patch, error) { return NewPatch(), nil }).
		Node("work", func(ctx context.Context, s State) (Patch, error) {
			var i int
			if err := s.Arg(&i); err != nil {
				return Patch{}, err
			}
			if work != nil {
				if err := work(ctx, i); err != nil {
					return Patch{}, err
				}
			}
			return NewPatch(ts.items.Append(i * 10)), nil
		}).
		Node("join", func(ctx context.Context, s State) (Patch, error) {
			return NewPatch(ts.count.Set(len(ts.items.Get(s)))), nil
		}).
		Edge(Start, "split").
		Branch("split", func(s State) []Route {
			routes := make([]Route, n)
			for i := range routes {
				routes[i] = Send("work", i)
			}
			return routes
		}).
		Edge("work", "join").Edge("join", End).Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestFanOut100(t *testing.T) {
	ts := newTestSchema()
	var running, peak atomic.Int32
	g := fanOutGraph(t, ts, 100, func(ctx context.Context, i int) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Duration(100-i) * 20 * time.Microsecond) // later tasks finish first
		running.Add(-1)
		return nil
	})
	cp := store.NewMemory()
	res, err := g.Invoke(context.Background(), Config{Thread: "t", Checkpointer: cp, Concurrency: 8}, NewPatch())
	if err != nil {
		t.Fatal(err)
	}
	items := ts.items.Get(res.State)
	if len(items) != 100 || ts.count.Get(res.State) != 100 {
		t.Fatalf("got %d items, join saw %d", len(items), ts.count.Get(res.State))
	}
	for i, v := range items {
		if v != i*10 {
			t.Fatalf("item %d = %d: order not deterministic", i, v)
		}
	}
	if peak.Load() > 8 || peak.Load() < 2 {
		t.Errorf("peak concurrency %d, want 2..8", peak.Load())
	}
	if res.Steps != 3 {
		t.Errorf("steps = %d, want 3 (split, 100 x work, join)", res.Steps)
	}
	st, err := cp.Load(context.Background(), "t", "")
	if err != nil || len(st.Lists["items"]) != 100 {
		t.Fatalf("stored items %d, err %v", len(st.Lists["items"]), err)
	}
}

func TestStepLimit(t *testing.T) {
	ts := newTestSchema()
	g := counterGraph(t, ts, 1000)
	cp := store.NewMemory()
	cfg := Config{Thread: "t", Checkpointer: cp, StepLimit: 10}
	res, err := g.Invoke(context.Background(), cfg, NewPatch())
	if err != nil || res.Status != StatusLimit || res.Steps != 10 {
		t.Fatalf("status %s, steps %d, err %v", res.Status, res.Steps, err)
	}
	if c := ts.count.Get(res.State); c != 10 {
		t.Fatalf("count %d, want 10", c)
	}
	st, _ := cp.Load(context.Background(), "t", "")
	if st.Status != StatusLimit || len(st.Next) != 1 {
		t.Fatalf("stored status %s with %d next tasks", st.Status, len(st.Next))
	}
	// Resuming with a new budget continues where it stopped.
	res, err = g.Resume(context.Background(), cfg)
	if err != nil || res.Status != StatusLimit || ts.count.Get(res.State) != 20 {
		t.Fatalf("resume: status %s count %d err %v", res.Status, ts.count.Get(res.State), err)
	}
	if n := len(ts.msgs.Get(res.State)); n != 20 {
		t.Fatalf("%d messages after resume, want 20", n)
	}
}

// A node that returns ErrStop ends the run with StatusLimit before its step,
// and a resume runs that step again.
func TestNodeStopsAtItsOwnLimit(t *testing.T) {
	ts := newTestSchema()
	stopAt := 3 // the node refuses to make count 3 until allowed
	g, err := New(ts.Schema).
		Node("inc", func(ctx context.Context, s State) (Patch, error) {
			c := ts.count.Get(s) + 1
			if c == stopAt {
				return Patch{}, fmt.Errorf("budget spent: %w", ErrStop)
			}
			return NewPatch(ts.count.Set(c)), nil
		}).
		Edge(Start, "inc").
		Branch("inc", func(s State) []Route {
			if ts.count.Get(s) >= 5 {
				return []Route{To(End)}
			}
			return []Route{To("inc")}
		}).Compile()
	if err != nil {
		t.Fatal(err)
	}
	cp := store.NewMemory()
	cfg := Config{Thread: "t", Checkpointer: cp}
	res, err := g.Invoke(context.Background(), cfg, NewPatch())
	if err != nil || res.Status != StatusLimit || ts.count.Get(res.State) != 2 {
		t.Fatalf("status %s count %d err %v, want limit at 2", res.Status, ts.count.Get(res.State), err)
	}
	if st, _ := cp.Load(context.Background(), "t", ""); st.Status != StatusLimit || len(st.Next) != 1 {
		t.Fatalf("stored status %s with %d next tasks", st.Status, len(st.Next))
	}
	stopAt = 0
	res, err = g.Resume(context.Background(), cfg)
	if err != nil || res.Status != StatusDone || ts.count.Get(res.State) != 5 {
		t.Fatalf("resume: status %s count %d err %v", res.Status, ts.count.Get(res.State), err)
	}
}

func TestCancelBlockedNode(t *testing.T) {
	ts := newTestSchema()
	blocked := make(chan struct{})
	var calls atomic.Int32
	g, err := New(ts.Schema).
		Node("first", func(ctx context.Context, s State) (Patch, error) {
			return NewPatch(ts.msgs.Append(msg("first", "ok"))), nil
		}).
		Node("slow", func(ctx context.Context, s State) (Patch, error) {
			if calls.Add(1) == 1 {
				close(blocked)
				<-ctx.Done()
				return Patch{}, ctx.Err()
			}
			return NewPatch(ts.msgs.Append(msg("slow", "done"))), nil
		}).
		Edge(Start, "first").Edge("first", "slow").Edge("slow", End).Compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cp   store.Checkpointer
	}{{"memory", store.NewMemory()}, {"bbolt", openBolt(t)}} {
		t.Run(c.name, func(t *testing.T) {
			calls.Store(0)
			blocked = make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			cfg := Config{Thread: "t", Checkpointer: c.cp}
			go func() { <-blocked; cancel() }()
			res, err := g.Invoke(ctx, cfg, NewPatch(ts.msgs.Append(msg("in", "go"))))
			if err != nil || res.Status != StatusCancelled {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			st, err := c.cp.Load(context.Background(), "t", "")
			if err != nil || st.Status != StatusCancelled || len(st.Next) != 1 || st.Next[0].Node != "slow" {
				t.Fatalf("checkpoint after cancel: %+v, %v", st, err)
			}
			res, err = g.Resume(context.Background(), cfg)
			if err != nil || res.Status != StatusDone {
				t.Fatalf("resume: %s %v", res.Status, err)
			}
			var ids []string
			for _, m := range ts.msgs.Get(res.State) {
				ids = append(ids, m.ID)
			}
			if !reflect.DeepEqual(ids, []string{"in", "first", "slow"}) {
				t.Fatalf("messages after resume: %v", ids)
			}
		})
	}
}

func TestPendingWritesNotRedone(t *testing.T) {
	ts := newTestSchema()
	var calls [10]atomic.Int32
	var failOnce atomic.Bool
	failOnce.Store(true)
	g := fanOutGraph(t, ts, 10, func(ctx context.Context, i int) error {
		calls[i].Add(1)
		if i == 7 && failOnce.Swap(false) {
			return errors.New("flaky")
		}
		return nil
	})
	cp := store.NewMemory()
	cfg := Config{Thread: "t", Checkpointer: cp}
	res, err := g.Invoke(context.Background(), cfg, NewPatch())
	if err == nil || res.Status != StatusFailed || !strings.Contains(err.Error(), "flaky") {
		t.Fatalf("want failure, got %s %v", res.Status, err)
	}
	st, _ := cp.Load(context.Background(), "t", "")
	if len(st.Pending) != 9 {
		t.Fatalf("%d pending writes, want 9", len(st.Pending))
	}
	res, err = g.Resume(context.Background(), cfg)
	if err != nil || res.Status != StatusDone {
		t.Fatalf("resume: %s %v", res.Status, err)
	}
	for i := range calls {
		want := int32(1)
		if i == 7 {
			want = 2
		}
		if got := calls[i].Load(); got != want {
			t.Errorf("task %d ran %d times, want %d", i, got, want)
		}
	}
	if items := ts.items.Get(res.State); len(items) != 10 {
		t.Fatalf("%d results after resume, want 10", len(items))
	}
}

func TestInputIdempotent(t *testing.T) {
	ts := newTestSchema()
	g, err := New(ts.Schema).
		Node("echo", func(ctx context.Context, s State) (Patch, error) {
			var last tmsg
			for _, m := range ts.msgs.Get(s) {
				if m.Role == "human" {
					last = m
				}
			}
			return NewPatch(ts.msgs.Append(tmsg{ID: "re-" + last.ID, Role: "ai", Content: last.Content})), nil
		}).
		Edge(Start, "echo").Edge("echo", End).Compile()
	if err != nil {
		t.Fatal(err)
	}
	cp := store.NewMemory()
	cfg := Config{Thread: "t", Checkpointer: cp}
	in := tmsg{ID: "in-1", Role: "human", Content: "hello"}
	for i := 0; i < 3; i++ {
		if _, err := g.Invoke(context.Background(), cfg, NewPatch(ts.msgs.Append(in))); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := cp.Load(context.Background(), "t", "")
	if n := len(st.Lists["messages"]); n != 2 {
		t.Fatalf("%d stored messages after delivering one input 3 times, want 2", n)
	}
}

func TestNodePanicFailsRun(t *testing.T) {
	ts := newTestSchema()
	g, _ := New(ts.Schema).
		Node("boom", func(ctx context.Context, s State) (Patch, error) { panic("kaboom") }).
		Edge(Start, "boom").Compile()
	res, err := g.Invoke(context.Background(), Config{}, NewPatch())
	if err == nil || res.Status != StatusFailed || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("status %s err %v", res.Status, err)
	}
}

func TestCompileErrors(t *testing.T) {
	ts := newTestSchema()
	nop := func(ctx context.Context, s State) (Patch, error) { return NewPatch(), nil }
	for _, b := range []*Builder{
		New(ts.Schema).Node("a", nop),
		New(ts.Schema).Node("a", nop).Edge(Start, "b"),
		New(ts.Schema).Node("a", nop).Node("a", nop).Edge(Start, "a"),
		New(ts.Schema).Node(End, nop).Edge(Start, End),
	} {
		if _, err := b.Compile(); err == nil {
			t.Error("want compile error")
		}
	}
}

func openBolt(t testing.TB) *store.Bolt {
	t.Helper()
	db, err := store.Open(t.TempDir() + "/s.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestUpdateAppliesPendingThenPatch(t *testing.T) {
	ts := newTestSchema()
	var failOnce atomic.Bool
	failOnce.Store(true)
	g := fanOutGraph(t, ts, 3, func(ctx context.Context, i int) error {
		if i == 2 && failOnce.Swap(false) {
			return errors.New("stop")
		}
		return nil
	})
	cp := store.NewMemory()
	cfg := Config{Thread: "t", Checkpointer: cp}
	g.Invoke(context.Background(), cfg, NewPatch())
	var seen int
	err := g.Update(context.Background(), cfg, func(s State) Patch {
		seen = len(ts.items.Get(s))
		return NewPatch(ts.items.Append(-1))
	}, StatusCancelled, "join")
	if err != nil {
		t.Fatal(err)
	}
	if seen != 2 {
		t.Fatalf("build saw %d items, want the 2 pending ones", seen)
	}
	res, err := g.Resume(context.Background(), cfg)
	if err != nil || res.Status != StatusDone {
		t.Fatal(res.Status, err)
	}
	if got := ts.items.Get(res.State); !reflect.DeepEqual(got, []int{0, 10, -1}) || ts.count.Get(res.State) != 3 {
		t.Fatalf("items %v count %d", got, ts.count.Get(res.State))
	}
}

func BenchmarkFanOut(b *testing.B) {
	for _, kind := range []string{"memory", "bbolt"} {
		b.Run("store="+kind, func(b *testing.B) {
			ts := newTestSchema()
			g := fanOutGraph(b, ts, 100, nil)
			var cp store.Checkpointer = store.NewMemory()
			if kind == "bbolt" {
				db, err := store.Open(b.TempDir() + "/w2.db")
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				cp = db
			}
			for i := 0; i < b.N; i++ {
				res, err := g.Invoke(context.Background(), Config{Thread: fmt.Sprint(i), Checkpointer: cp}, NewPatch())
				if err != nil || len(ts.items.Get(res.State)) != 100 {
					b.Fatal(res.Status, err)
				}
			}
		})
	}
}
