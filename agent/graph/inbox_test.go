package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/store"
)

// gate lets a test hold a node until it says so, and see that it is held.
type gate struct {
	entered chan int
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan int, 100), release: make(chan struct{}, 100)} }

// loopGraph is a model-and-tools loop: "agent" writes an AI message that
// "calls" a tool until it has answered n times; "tool" answers it, held by g.
// The state accepts input only when the newest message is not a call.
func loopGraph(t *testing.T, ts testSchema, n int, g *gate) *Graph {
	t.Helper()
	gr, err := New(ts.Schema).
		Node("agent", func(ctx context.Context, s State) (Patch, error) {
			c := ts.count.Get(s) + 1
			role := "call"
			if c > n {
				role = "answer"
			}
			return NewPatch(ts.count.Set(c), ts.msgs.Append(tmsg{ID: fmt.Sprintf("ai%d", c), Role: role, Content: fmt.Sprint(len(ts.msgs.Get(s)))})), nil
		}).
		Node("tool", func(ctx context.Context, s State) (Patch, error) {
			c := ts.count.Get(s)
			g.entered <- c
			select {
			case <-g.release:
			case <-ctx.Done():
				return Patch{}, ctx.Err()
			}
			return NewPatch(ts.msgs.Append(tmsg{ID: fmt.Sprintf("tool%d", c), Role: "tool"})), nil
		}).
		Edge(Start, "agent").
		Branch("agent", func(s State) []Route {
			if ms := ts.msgs.Get(s); ms[len(ms)-1].Role == "call" {
				return []Route{To("tool")}
			}
			return []Route{To(End)}
		}).
		Edge("tool", "agent").
		Compile()
	if err != nil {
		t.Fatal(err)
	}
	return gr
}

func accepts(ts testSchema) func(State) bool {
	return func(s State) bool {
		ms := ts.msgs.Get(s)
		return len(ms) == 0 || ms[len(ms)-1].Role != "call"
	}
}

func ids(ms []tmsg) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func waitEntered(t *testing.T, g *gate) int {
	t.Helper()
	select {
	case c := <-g.entered:
		return c
	case <-time.After(time.Minute):
		t.Fatal("the tool never ran")
		return 0
	}
}

// Input queued while a tool runs is appended after the tool's answer, before
// the model's next turn, in queue order; input queued at the last turn makes
// the run go on instead of ending; the run's end refuses more input.
func TestQueueAppliesAtStepBoundaries(t *testing.T) {
	ts := newTestSchema()
	g := newGate()
	gr := loopGraph(t, ts, 2, g)
	cp := store.NewMemory()
	var mu sync.Mutex
	var applied []string
	cfg := Config{Thread: "t", Checkpointer: cp, Accepts: accepts(ts), Events: func(e Event) {
		if e.Type == InputApplied {
			mu.Lock()
			applied = append(applied, e.TaskID)
			mu.Unlock()
		}
	}}
	done := make(chan Result, 1)
	go func() {
		res, _ := gr.Invoke(context.Background(), cfg, NewPatch(ts.msgs.Append(msg("task", "go"))))
		done <- res
	}()
	waitEntered(t, g) // the first tool call is running
	for i, id := range []string{"q1", "q2"} {
		pos, err := gr.Queue(context.Background(), cfg, id, NewPatch(ts.msgs.Append(msg(id, "steer"))))
		if err != nil || pos != i+1 {
			t.Fatalf("queue %s: position %d, %v", id, pos, err)
		}
	}
	g.release <- struct{}{}
	waitEntered(t, g)
	g.release <- struct{}{}
	res := <-done
	if res.Status != StatusDone {
		t.Fatalf("%+v", res)
	}
	want := []string{"task", "ai1", "tool1", "q1", "q2", "ai2", "tool2", "ai3"}
	if got := ids(ts.msgs.Get(res.State)); !slices.Equal(got, want) {
		t.Fatalf("messages %v, want %v", got, want)
	}
	if !slices.Equal(applied, []string{"q1", "q2"}) {
		t.Fatalf("applied events %v", applied)
	}
	if _, err := gr.Queue(context.Background(), cfg, "late", NewPatch(ts.msgs.Append(msg("late", "x")))); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("queue after the end: %v", err)
	}
}

// Input queued while the last turn runs gets a turn of its own: the run goes
// on from Start instead of ending.
func TestQueueAtTheEndGoesOn(t *testing.T) {
	ts := newTestSchema()
	held := make(chan struct{})
	entered := make(chan struct{}, 10)
	calls := 0
	gr, err := New(ts.Schema).
		Node("agent", func(ctx context.Context, s State) (Patch, error) {
			calls++
			entered <- struct{}{}
			if calls == 1 {
				<-held
			}
			return NewPatch(ts.msgs.Append(tmsg{ID: fmt.Sprintf("ai%d", calls), Role: "answer"})), nil
		}).
		Edge(Start, "agent").Edge("agent", End).Compile()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Thread: "t", Checkpointer: store.NewMemory()}
	done := make(chan Result, 1)
	go func() {
		res, _ := gr.Invoke(context.Background(), cfg, NewPatch(ts.msgs.Append(msg("task", "go"))))
		done <- res
	}()
	<-entered
	if _, err := gr.Queue(context.Background(), cfg, "more", NewPatch(ts.msgs.Append(msg("more", "and this")))); err != nil {
		t.Fatal(err)
	}
	close(held)
	res := <-done
	want := []string{"task", "ai1", "more", "ai2"}
	if got := ids(ts.msgs.Get(res.State)); res.Status != StatusDone || !slices.Equal(got, want) {
		t.Fatalf("%s: messages %v, want %v", res.Status, got, want)
	}
}

// A cancelled run hands back the input it did not apply.
func TestQueuedInputReturnedOnCancel(t *testing.T) {
	ts := newTestSchema()
	g := newGate()
	gr := loopGraph(t, ts, 5, g)
	cfg := Config{Thread: "t", Checkpointer: store.NewMemory(), Accepts: accepts(ts)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() {
		res, _ := gr.Invoke(ctx, cfg, NewPatch(ts.msgs.Append(msg("task", "go"))))
		done <- res
	}()
	waitEntered(t, g)
	gr.Queue(context.Background(), cfg, "q1", NewPatch(ts.msgs.Append(msg("q1", "steer"))))
	cancel()
	res := <-done
	if res.Status != StatusCancelled || !slices.Equal(res.Queued, []string{"q1"}) {
		t.Fatalf("%s, queued %v", res.Status, res.Queued)
	}
}

// frozen is a store that stops writing when told: a process that died.
type frozen struct {
	store.Checkpointer
	mu   sync.Mutex
	dead bool
}

func (f *frozen) kill() { f.mu.Lock(); f.dead = true; f.mu.Unlock() }

func (f *frozen) Put(ctx context.Context, cp store.Checkpoint) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead {
		return errors.New("dead")
	}
	return f.Checkpointer.Put(ctx, cp)
}

func (f *frozen) PutWrite(ctx context.Context, w store.PendingWrite) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead {
		return errors.New("dead")
	}
	return f.Checkpointer.PutWrite(ctx, w)
}

// Input queued before a crash is applied once by the resumed run, at the
// first boundary that accepts it, and in queue order.
func TestQueuedInputSurvivesACrash(t *testing.T) {
	ts := newTestSchema()
	g := newGate()
	gr := loopGraph(t, ts, 2, g)
	mem := store.NewMemory()
	dying := &frozen{Checkpointer: mem}
	cfg := Config{Thread: "t", Checkpointer: dying, Accepts: accepts(ts)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go gr.Invoke(ctx, cfg, NewPatch(ts.msgs.Append(msg("task", "go"))))
	waitEntered(t, g)
	for _, id := range []string{"q1", "q2"} {
		if _, err := gr.Queue(context.Background(), cfg, id, NewPatch(ts.msgs.Append(msg(id, "steer")))); err != nil {
			t.Fatal(err)
		}
	}
	dying.kill() // the process dies with the tool running and two inputs queued
	cancel()
	time.Sleep(10 * time.Millisecond)

	fresh := loopGraph(t, ts, 2, g) // a new process
	go func() {
		for range 2 {
			<-g.entered
			g.release <- struct{}{}
		}
	}()
	res, err := fresh.Resume(context.Background(), Config{Thread: "t", Checkpointer: mem, Accepts: accepts(ts)})
	if err != nil || res.Status != StatusDone {
		t.Fatalf("%+v %v", res, err)
	}
	want := []string{"task", "ai1", "tool1", "q1", "q2", "ai2", "tool2", "ai3"}
	if got := ids(ts.msgs.Get(res.State)); !slices.Equal(got, want) {
		t.Fatalf("messages %v, want %v", got, want)
	}
	st, _ := mem.Load(context.Background(), "t", "")
	if len(st.Pending) != 0 {
		t.Fatalf("pending writes left: %v", st.Pending)
	}
}

// Amend changes a stopped thread's state without losing its place: the
// finished tasks' writes are kept, the unfinished tasks still run on resume.
func TestAmendKeepsThePlannedWork(t *testing.T) {
	ts := newTestSchema()
	g := newGate()
	gr := loopGraph(t, ts, 1, g)
	mem := store.NewMemory()
	cfg := Config{Thread: "t", Checkpointer: mem, Accepts: accepts(ts)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() {
		res, _ := gr.Invoke(ctx, cfg, NewPatch(ts.msgs.Append(msg("task", "go"))))
		done <- res
	}()
	waitEntered(t, g)
	cancel() // the tool round is interrupted: "tool" stays planned
	if res := <-done; res.Status != StatusCancelled {
		t.Fatalf("%+v", res)
	}
	if err := gr.Amend(context.Background(), cfg, func(s State) Patch {
		return NewPatch(ts.note.Set("amended"), ts.msgs.Append(msg("note", "switched")))
	}); err != nil {
		t.Fatal(err)
	}
	st, _ := mem.Load(context.Background(), "t", "")
	if st.Status != StatusCancelled || len(st.Next) != 1 || st.Next[0].Node != "tool" {
		t.Fatalf("status %s, next %+v", st.Status, st.Next)
	}
	go func() { <-g.entered; g.release <- struct{}{} }()
	res, err := gr.Resume(context.Background(), cfg)
	if err != nil || res.Status != StatusDone || ts.note.Get(res.State) != "amended" {
		t.Fatalf("%+v %v", res, err)
	}
	want := []string{"task", "ai1", "note", "tool1", "ai2"}
	if got := ids(ts.msgs.Get(res.State)); !slices.Equal(got, want) {
		t.Fatalf("messages %v, want %v", got, want)
	}
}
