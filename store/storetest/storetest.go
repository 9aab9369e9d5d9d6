// Package storetest is the conformance suite of store.Store: what every
// backend (memory, bbolt, PostgreSQL) must do alike: checkpoints and their
// list operations, pending writes, namespaces, the session index, a run's
// durability chosen per write (exit mode included), status transitions,
// leases and approvals. A backend's tests call Run with a function that
// opens a new, empty store.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/store"
)

// Run runs the suite; open returns a new, empty store for each subtest
// (closed by Run).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	fresh := func(t *testing.T) store.Store {
		s := open(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		return s
	}
	// The checkpoint tests run under the store's default durability and
	// under sync and batched chosen per write (Checkpoint.Durability,
	// PendingWrite.Durability). Exit is left out here: it shows a run's
	// steps only when the run ends, and these tests read in the middle of
	// runs; ExitDurability has its own.
	for _, d := range []store.Durability{"", store.Sync, store.Batched} {
		name := "durability=" + string(d)
		if d == "" {
			name = "durability=default"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			in := func(t *testing.T) store.Store { return durable{fresh(t), d} }
			t.Run("Checkpointer", func(t *testing.T) { testCheckpointer(t, ctx, in(t)) })
			t.Run("UpsertInPlace", func(t *testing.T) { testUpsertInPlace(t, ctx, in(t)) })
			t.Run("PendingWrites", func(t *testing.T) { testPendingWrites(t, ctx, in(t)) })
			t.Run("Namespaces", func(t *testing.T) { testNamespaces(t, ctx, in(t)) })
		})
	}
	for _, d := range []store.Durability{store.Sync, store.Batched, store.Exit} {
		t.Run("Intents/durability="+string(d), func(t *testing.T) { testIntents(t, context.Background(), fresh(t), d) })
	}
	t.Run("Sessions", func(t *testing.T) { testSessions(t, fresh(t)) })
	t.Run("IndexWithCheckpoint", func(t *testing.T) { testIndexWithCheckpoint(t, fresh(t)) })
	t.Run("ExitDurability", func(t *testing.T) { testExitDurability(t, fresh(t)) })
	t.Run("StatusTransitions", func(t *testing.T) { testStatusTransitions(t, fresh(t)) })
	t.Run("Leases", func(t *testing.T) { testLeases(t, fresh(t)) })
	t.Run("Approvals", func(t *testing.T) { testApprovals(t, fresh(t)) })
	t.Run("History", func(t *testing.T) { testHistory(t, fresh(t)) })
	t.Run("HistoryUsage", func(t *testing.T) { testHistoryUsage(t, fresh(t)) })
}

// durable is a store whose writes that choose no durability choose d.
type durable struct {
	store.Store
	d store.Durability
}

func (s durable) Put(ctx context.Context, cp store.Checkpoint) error {
	if cp.Durability == "" {
		cp.Durability = s.d
	}
	return s.Store.Put(ctx, cp)
}

func (s durable) PutWrite(ctx context.Context, w store.PendingWrite) error {
	if w.Durability == "" {
		w.Durability = s.d
	}
	return s.Store.PutWrite(ctx, w)
}

// putWrite writes a pending write of thread's namespace ns.
func putWrite(t *testing.T, ctx context.Context, s store.Store, thread, ns, task, writes string) {
	t.Helper()
	if err := s.PutWrite(ctx, store.PendingWrite{Thread: thread, Namespace: ns, Task: task, Writes: raw(writes)}); err != nil {
		t.Fatal(err)
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func bodies(items []store.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ID+"="+string(it.Body))
	}
	return out
}

func put(t *testing.T, ctx context.Context, s store.Store, cp store.Checkpoint) {
	t.Helper()
	if err := s.Put(ctx, cp); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, ctx context.Context, s store.Store, thread, ns string) *store.State {
	t.Helper()
	st, err := s.Load(ctx, thread, ns)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// testCheckpointer: deltas applied in order (values last-write, upserts by
// ID, removes, resets, appends without ID), the head of the newest step,
// and ErrNotFound for an unknown thread.
func testCheckpointer(t *testing.T, ctx context.Context, s store.Store) {
	if _, err := s.Load(ctx, "t", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("load of unknown thread: %v", err)
	}
	steps := []store.Checkpoint{
		{Step: 0, Status: store.StatusRunning, Values: map[string]json.RawMessage{"n": raw("1"), "keep": raw(`"k"`)},
			Lists: map[string][]store.Op{"m": {{Kind: store.OpUpsert, ID: "a", Body: raw(`"A"`)}, {Kind: store.OpUpsert, ID: "b", Body: raw(`"B"`)}}, "x": {{Body: raw("1")}, {Body: raw("2")}}},
			Next:  []store.Task{{ID: "t1", Node: "agent", Arg: raw(`{"i":1}`)}}},
		{Step: 1, Status: store.StatusRunning, Values: map[string]json.RawMessage{"n": raw("2")},
			Lists: map[string][]store.Op{"m": {{Kind: store.OpUpsert, ID: "a", Body: raw(`"A2"`)}, {Kind: store.OpUpsert, ID: "c", Body: raw(`"C"`)}, {Kind: store.OpRemove, ID: "b"}}}},
		{Step: 2, Status: store.StatusDone, Lists: map[string][]store.Op{"x": {{Kind: store.OpReset}, {Body: raw("3")}}}},
	}
	for i, cp := range steps {
		cp.Thread = "t"
		put(t, ctx, s, cp)
		if i == 0 {
			st := load(t, ctx, s, "t", "")
			if st.Step != 0 || st.Status != store.StatusRunning || !reflect.DeepEqual(st.Next, cp.Next) {
				t.Fatalf("step 0 head: %+v", st)
			}
			if got := bodies(st.Lists["x"]); !reflect.DeepEqual(got, []string{"=1", "=2"}) {
				t.Fatalf("step 0 append list: %v", got)
			}
		}
	}
	st := load(t, ctx, s, "t", "")
	if st.Step != 2 || st.Status != store.StatusDone || string(st.Values["n"]) != "2" || string(st.Values["keep"]) != `"k"` || len(st.Next) != 0 {
		t.Fatalf("head: %+v", st)
	}
	if got := bodies(st.Lists["m"]); !reflect.DeepEqual(got, []string{`a="A2"`, `c="C"`}) {
		t.Errorf("messages list: %v", got)
	}
	if got := bodies(st.Lists["x"]); !reflect.DeepEqual(got, []string{"=3"}) {
		t.Errorf("append list: %v", got)
	}
	if len(st.Pending) != 0 {
		t.Errorf("pending: %v", st.Pending)
	}
	// A removed ID can come back: it is appended at the end.
	put(t, ctx, s, store.Checkpoint{Thread: "t", Step: 3, Status: store.StatusRunning,
		Lists: map[string][]store.Op{"m": {{Kind: store.OpUpsert, ID: "b", Body: raw(`"B2"`)}}}})
	if got := bodies(load(t, ctx, s, "t", "").Lists["m"]); !reflect.DeepEqual(got, []string{`a="A2"`, `c="C"`, `b="B2"`}) {
		t.Errorf("re-added ID: %v", got)
	}
	// A reset list can be filled again, IDs included.
	put(t, ctx, s, store.Checkpoint{Thread: "t", Step: 4, Status: store.StatusRunning,
		Lists: map[string][]store.Op{"m": {{Kind: store.OpReset}, {Kind: store.OpUpsert, ID: "a", Body: raw(`"A3"`)}}}})
	if got := bodies(load(t, ctx, s, "t", "").Lists["m"]); !reflect.DeepEqual(got, []string{`a="A3"`}) {
		t.Errorf("after reset: %v", got)
	}
	// Appended items (IDs new to the list) can be replaced and removed
	// like upserted ones, in their step and later.
	put(t, ctx, s, store.Checkpoint{Thread: "t", Step: 5, Status: store.StatusRunning,
		Lists: map[string][]store.Op{"m": {{Kind: store.OpAppend, ID: "d", Body: raw(`"D"`)}, {Kind: store.OpAppend, ID: "e", Body: raw(`"E"`)},
			{Kind: store.OpUpsert, ID: "d", Body: raw(`"D2"`)}, {Kind: store.OpAppend, Body: raw(`"no id"`)}}}})
	put(t, ctx, s, store.Checkpoint{Thread: "t", Step: 6, Status: store.StatusRunning,
		Lists: map[string][]store.Op{"m": {{Kind: store.OpRemove, ID: "e"}, {Kind: store.OpUpsert, ID: "a", Body: raw(`"A4"`)}, {Kind: store.OpAppend, ID: "f", Body: raw(`"F"`)}}}})
	if got := bodies(load(t, ctx, s, "t", "").Lists["m"]); !reflect.DeepEqual(got, []string{`a="A4"`, `d="D2"`, `="no id"`, `f="F"`}) {
		t.Errorf("appended items: %v", got)
	}
}

// testUpsertInPlace: an upsert by ID replaces its item where it stands, in
// a long list and across steps; a large body (compressed by bbolt and
// PostgreSQL) reads back as written.
func testUpsertInPlace(t *testing.T, ctx context.Context, s store.Store) {
	var want []string
	big := fmt.Sprintf("%q", fmt.Sprint(make([]int, 400))) // ~800 bytes of JSON text that compresses
	for step := 0; step < 10; step++ {
		var ops []store.Op
		for i := 0; i < 20; i++ {
			id := fmt.Sprintf("m%03d", step*20+i)
			body := fmt.Sprintf(`"%s"`, id)
			if i == 7 {
				body = big
			}
			ops = append(ops, store.Op{Kind: store.OpUpsert, ID: id, Body: raw(body)})
			want = append(want, id+"="+body)
		}
		put(t, ctx, s, store.Checkpoint{Thread: "u", Step: step, Status: store.StatusRunning, Lists: map[string][]store.Op{"messages": ops}})
	}
	put(t, ctx, s, store.Checkpoint{Thread: "u", Step: 10, Status: store.StatusDone, Lists: map[string][]store.Op{"messages": {
		{Kind: store.OpUpsert, ID: "m003", Body: raw(`"edited"`)},
		{Kind: store.OpUpsert, ID: "m150", Body: raw(`"edited too"`)},
		{Kind: store.OpUpsert, ID: "m003", Body: raw(`"edited twice"`)},
	}}})
	want[3] = `m003="edited twice"`
	want[150] = `m150="edited too"`
	st := load(t, ctx, s, "u", "")
	if got := bodies(st.Lists["messages"]); !reflect.DeepEqual(got, want) {
		t.Fatalf("after upserts in place:\n got %d items %v\nwant %d items %v", len(got), got, len(want), want)
	}
}

// testPendingWrites: insert-if-absent; kept by a Put of the same step,
// dropped by the next step's.
func testPendingWrites(t *testing.T, ctx context.Context, s store.Store) {
	put(t, ctx, s, store.Checkpoint{Thread: "t", Step: 3, Status: store.StatusRunning, Next: []store.Task{{ID: "a"}, {ID: "b"}}})
	for _, w := range []string{`"first"`, `"second"`} {
		putWrite(t, ctx, s, "t", "", "a", w)
	}
	putWrite(t, ctx, s, "t", "", "b", `{"b":true}`)
	st := load(t, ctx, s, "t", "")
	if len(st.Pending) != 2 || string(st.Pending["a"]) != `"first"` || string(st.Pending["b"]) != `{"b":true}` {
		t.Fatalf("pending: %v", st.Pending)
	}
	// Another namespace's pending writes are its own.
	put(t, ctx, s, store.Checkpoint{Thread: "t", Namespace: "sub", Step: 0, Status: store.StatusRunning})
	putWrite(t, ctx, s, "t", "sub", "a", `"sub"`)
	// A status update of the same step keeps them.
	put(t, ctx, s, store.Checkpoint{Thread: "t", Step: 3, Status: store.StatusCancelled, Next: st.Next})
	if st = load(t, ctx, s, "t", ""); len(st.Pending) != 2 || st.Status != store.StatusCancelled {
		t.Fatalf("after status update: %v %s", st.Pending, st.Status)
	}
	// The next step's checkpoint drops them, and only them.
	put(t, ctx, s, store.Checkpoint{Thread: "t", Step: 4, Status: store.StatusRunning})
	if st = load(t, ctx, s, "t", ""); len(st.Pending) != 0 {
		t.Fatalf("pending survived the step: %v", st.Pending)
	}
	if st = load(t, ctx, s, "t", "sub"); len(st.Pending) != 1 || string(st.Pending["a"]) != `"sub"` {
		t.Fatalf("another namespace's pending writes: %v", st.Pending)
	}
}

// testIntents: a store that keeps intents (store.Intents) returns them
// among the pending writes under store.IntentPrefix, a second one under a
// key replaces the first, the next step's checkpoint drops them. In Exit
// mode an intent writes the run's held steps with it (Load shows only what
// is written).
func testIntents(t *testing.T, ctx context.Context, bare store.Store, d store.Durability) {
	iw, ok := bare.(store.Intents)
	if !ok {
		t.Skip("the store keeps no intents")
	}
	s := durable{bare, d}
	put(t, ctx, s, store.Checkpoint{Thread: "i", Step: 0, Status: store.StatusRunning, Values: map[string]json.RawMessage{"v": raw("0")}})
	put(t, ctx, s, store.Checkpoint{Thread: "i", Step: 1, Status: store.StatusRunning, Values: map[string]json.RawMessage{"v": raw("1")},
		Next: []store.Task{{ID: "task", Node: "tools"}}})
	for _, body := range []string{`{"n":1}`, `{"n":2}`} {
		if err := iw.PutIntent(ctx, "i", "", "call-1", raw(body)); err != nil {
			t.Fatal(err)
		}
	}
	st := load(t, ctx, s, "i", "")
	if st.Step != 1 || string(st.Values["v"]) != "1" || len(st.Pending) != 1 || string(st.Pending[store.IntentPrefix+"call-1"]) != `{"n":2}` {
		t.Fatalf("after the intent: step %d v=%s pending %v", st.Step, st.Values["v"], st.Pending)
	}
	put(t, ctx, s, store.Checkpoint{Thread: "i", Step: 2, Status: store.StatusDone})
	if st = load(t, ctx, s, "i", ""); len(st.Pending) != 0 {
		t.Fatalf("the intent survived its step: %v", st.Pending)
	}
}

// testNamespaces: namespaces of one thread are separate.
func testNamespaces(t *testing.T, ctx context.Context, s store.Store) {
	put(t, ctx, s, store.Checkpoint{Thread: "t", Step: 5, Status: store.StatusRunning, Values: map[string]json.RawMessage{"v": raw(`"main"`)},
		Lists: map[string][]store.Op{"m": {{ID: "x", Body: raw("1")}}}})
	if _, err := s.Load(ctx, "t", "subagent-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("namespace leaked: %v", err)
	}
	put(t, ctx, s, store.Checkpoint{Thread: "t", Namespace: "subagent-1", Step: 0, Status: store.StatusRunning, Values: map[string]json.RawMessage{"v": raw(`"sub"`)},
		Lists: map[string][]store.Op{"m": {{ID: "x", Body: raw("2")}}}})
	main, sub := load(t, ctx, s, "t", ""), load(t, ctx, s, "t", "subagent-1")
	if main.Step != 5 || string(main.Values["v"]) != `"main"` || !reflect.DeepEqual(bodies(main.Lists["m"]), []string{"x=1"}) {
		t.Fatalf("main namespace: %+v", main)
	}
	if sub.Step != 0 || string(sub.Values["v"]) != `"sub"` || !reflect.DeepEqual(bodies(sub.Lists["m"]), []string{"x=2"}) {
		t.Fatalf("subagent namespace: %+v", sub)
	}
	if _, err := s.Load(ctx, "other", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown thread: %v", err)
	}
}

// testSessions: the index newest first and by project, Session of an
// unknown ID, DeleteSession with every namespace of its thread, and
// DeleteOlderThan.
func testSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	upd := putSessions(t, ctx, s, base)
	all, err := s.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range all {
		ids = append(ids, x.ID)
	}
	if !reflect.DeepEqual(ids, []string{"s1", "s2", "s3", "s0"}) {
		t.Fatalf("newest first: %v", ids)
	}
	web, _ := s.Sessions(ctx, "web")
	if len(web) != 2 || web[0].ID != "s2" || web[1].ID != "s0" {
		t.Fatalf("project filter: %v", web)
	}
	if none, err := s.Sessions(ctx, "nothing"); err != nil || len(none) != 0 {
		t.Fatalf("unknown project: %v %v", none, err)
	}
	got, err := s.Session(ctx, "s1")
	if err != nil || !reflect.DeepEqual(got, upd) {
		t.Fatalf("session s1: %+v %v, want %+v", got, err, upd)
	}
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	checkDeleteSession(t, ctx, s)
	checkRetention(t, ctx, s, base)
}

// putSessions writes the index entries of s0..s3 (s0 and s3 updated at
// base) and s1's checkpoint with its entry and two subagent namespaces; it
// returns s1's entry.
func putSessions(t *testing.T, ctx context.Context, s store.Store, base time.Time) store.Session {
	for i, p := range []string{"web", "api", "web"} {
		sess := store.Session{ID: fmt.Sprintf("s%d", i), Project: p, Title: "t", Status: store.StatusDone, Created: base, Updated: base.Add(time.Duration(i) * time.Hour), Messages: i}
		if err := s.PutSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	// Same Updated: the greater ID first.
	if err := s.PutSession(ctx, store.Session{ID: "s3", Project: "cli", Updated: base}); err != nil {
		t.Fatal(err)
	}
	// s1 also has a checkpoint written together with its index entry, and
	// a subagent's namespace.
	upd := store.Session{ID: "s1", Project: "api", Root: "/src/api", Model: "m", Edits: "review", Title: "ünïcode \"title\"", Status: store.StatusRunning,
		Created: base, Updated: base.Add(5*time.Hour + 123456789*time.Nanosecond), Messages: 7}
	put(t, ctx, s, store.Checkpoint{Thread: "s1", Step: 0, Status: store.StatusRunning, Index: &upd})
	put(t, ctx, s, store.Checkpoint{Thread: "s1", Namespace: "subagent-ab", Step: 0, Status: store.StatusRunning,
		Lists: map[string][]store.Op{"m": {{Body: raw("1")}}}})
	putWrite(t, ctx, s, "s1", "subagent-cd", "task", "1")
	return upd
}

// checkDeleteSession: DeleteSession removes s1 with every namespace of its
// thread and says so once; a later write to the thread starts it afresh.
func checkDeleteSession(t *testing.T, ctx context.Context, s store.Store) {
	if ok, err := s.DeleteSession(ctx, "s1"); !ok || err != nil {
		t.Fatalf("delete s1: %v %v", ok, err)
	}
	if ok, _ := s.DeleteSession(ctx, "s1"); ok {
		t.Fatal("second delete reported true")
	}
	for _, ns := range []string{"", "subagent-ab", "subagent-cd"} {
		if _, err := s.Load(ctx, "s1", ns); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("checkpoint %q survived delete: %v", ns, err)
		}
	}
	// A write to the deleted thread starts it afresh: nothing old comes back.
	put(t, ctx, s, store.Checkpoint{Thread: "s1", Namespace: "subagent-ab", Step: 0, Status: store.StatusRunning})
	if st := load(t, ctx, s, "s1", "subagent-ab"); len(st.Lists["m"]) != 0 {
		t.Fatalf("deleted items came back: %v", st.Lists)
	}
	if _, err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
}

// checkRetention: DeleteOlderThan removes the sessions updated before a
// time (s0 and s3), with their checkpoints, and keeps the others.
func checkRetention(t *testing.T, ctx context.Context, s store.Store, base time.Time) {
	// s0 and s3 (updated at base) are older than base+90m; s2 is not.
	put(t, ctx, s, store.Checkpoint{Thread: "s0", Step: 0, Status: store.StatusDone})
	put(t, ctx, s, store.Checkpoint{Thread: "s2", Step: 0, Status: store.StatusDone})
	n, err := s.DeleteOlderThan(ctx, base.Add(90*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("retention removed %d, %v", n, err)
	}
	left, _ := s.Sessions(ctx, "")
	if len(left) != 1 || left[0].ID != "s2" {
		t.Fatalf("after retention: %v", left)
	}
	if _, err := s.Load(ctx, "s0", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the checkpoint of a pruned session survived: %v", err)
	}
	if _, err := s.Load(ctx, "s2", ""); err != nil {
		t.Fatalf("the checkpoint of a kept session: %v", err)
	}
	if n, err := s.DeleteOlderThan(ctx, base); err != nil || n != 0 {
		t.Fatalf("nothing to prune: %d %v", n, err)
	}
}

// testIndexWithCheckpoint: Put with Index updates the session entry, in
// every durability mode by the time the run's end returns.
func testIndexWithCheckpoint(t *testing.T, s store.Store) {
	for _, d := range []store.Durability{store.Sync, store.Batched, store.Exit} {
		ctx := context.Background()
		id := "idx-" + string(d)
		for step := 0; step < 3; step++ {
			status := store.StatusRunning
			if step == 2 {
				status = store.StatusDone
			}
			sess := store.Session{ID: id, Project: "p", Status: status, Updated: time.Date(2026, 2, 1, 0, 0, step, 0, time.UTC), Messages: step}
			put(t, ctx, s, store.Checkpoint{Thread: id, Step: step, Status: status, Index: &sess, Durability: d,
				Lists: map[string][]store.Op{"m": {{ID: fmt.Sprint(step), Body: raw(fmt.Sprint(step))}}}})
		}
		got, err := s.Session(context.Background(), id)
		if err != nil || got.Messages != 2 || got.Status != store.StatusDone {
			t.Fatalf("%s: session after the run: %+v %v", d, got, err)
		}
		st := load(t, context.Background(), s, id, "")
		if st.Step != 2 || len(st.Lists["m"]) != 3 {
			t.Fatalf("%s: checkpoint after the run: %+v", d, st)
		}
	}
}

// testExitDurability: a run in exit mode (its steps held until it ends)
// stores, when its end returns, exactly what its steps wrote in order:
// items appended, replaced and removed across steps, values, its pending
// writes dropped by the next step, the session index of its last step;
// a second run goes on from the first; a sync write of another thread
// meanwhile is not held with it.
func testExitDurability(t *testing.T, s store.Store) {
	ctx := context.Background()
	exit := func(cp store.Checkpoint) store.Checkpoint { cp.Thread, cp.Durability = "x", store.Exit; return cp }
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sess := func(status store.Status, n int) *store.Session {
		return &store.Session{ID: "x", Project: "p", Status: status, Updated: base.Add(time.Duration(n) * time.Second), Messages: n}
	}
	put(t, ctx, s, exit(store.Checkpoint{Step: 0, Status: store.StatusRunning, Index: sess(store.StatusRunning, 1), Values: map[string]json.RawMessage{"v": raw("0")},
		Lists: map[string][]store.Op{"m": {{Kind: store.OpAppend, ID: "a", Body: raw(`"A"`)}}}, Next: []store.Task{{ID: "t1", Node: "n"}}}))
	if err := s.PutWrite(ctx, store.PendingWrite{Thread: "x", Task: "t1", Writes: raw(`"w1"`), Durability: store.Exit}); err != nil {
		t.Fatal(err)
	}
	put(t, ctx, s, store.Checkpoint{Thread: "other", Step: 0, Status: store.StatusRunning, Durability: store.Sync})
	if st := load(t, ctx, s, "other", ""); st.Step != 0 {
		t.Fatalf("a sync write of another thread: %+v", st)
	}
	put(t, ctx, s, exit(store.Checkpoint{Step: 1, Status: store.StatusRunning, Index: sess(store.StatusRunning, 2), Values: map[string]json.RawMessage{"v": raw("1")},
		Lists: map[string][]store.Op{"m": {{Kind: store.OpAppend, ID: "b", Body: raw(`"B"`)}, {Kind: store.OpUpsert, ID: "a", Body: raw(`"A2"`)}}}}))
	put(t, ctx, s, exit(store.Checkpoint{Step: 2, Status: store.StatusDone, Index: sess(store.StatusDone, 3),
		Lists: map[string][]store.Op{"m": {{Kind: store.OpRemove, ID: "b"}, {Kind: store.OpAppend, ID: "c", Body: raw(`"C"`)}}}}))
	st := load(t, ctx, s, "x", "")
	if st.Step != 2 || st.Status != store.StatusDone || string(st.Values["v"]) != "1" || len(st.Pending) != 0 ||
		!reflect.DeepEqual(bodies(st.Lists["m"]), []string{`a="A2"`, `c="C"`}) {
		t.Fatalf("after the run: %+v %v", st, bodies(st.Lists["m"]))
	}
	if got, err := s.Session(ctx, "x"); err != nil || got.Status != store.StatusDone || got.Messages != 3 {
		t.Fatalf("the index after the run: %+v %v", got, err)
	}
	// A second run goes on from the first.
	put(t, ctx, s, exit(store.Checkpoint{Step: 3, Status: store.StatusRunning, Lists: map[string][]store.Op{"m": {{Kind: store.OpAppend, ID: "d", Body: raw(`"D"`)}}}}))
	put(t, ctx, s, exit(store.Checkpoint{Step: 4, Status: store.StatusCancelled, Lists: map[string][]store.Op{"m": {{Kind: store.OpUpsert, ID: "c", Body: raw(`"C2"`)}}}}))
	if st := load(t, ctx, s, "x", ""); st.Step != 4 || st.Status != store.StatusCancelled || !reflect.DeepEqual(bodies(st.Lists["m"]), []string{`a="A2"`, `c="C2"`, `d="D"`}) {
		t.Fatalf("after the second run: %+v %v", st, bodies(st.Lists["m"]))
	}
}

// testStatusTransitions: in every durability mode a thread's status goes
// where its checkpoints take it (running, cancelled, running again on
// resume, limit, failed, done), Load and the session index say the newest,
// and an ended status is there when its Put returns. Interrupted is a
// listing's word, never stored: it does not end a run.
func testStatusTransitions(t *testing.T, s store.Store) {
	ctx := context.Background()
	if store.StatusInterrupted.Ended() || store.StatusRunning.Ended() {
		t.Fatal("interrupted or running ends a run")
	}
	path := []store.Status{store.StatusRunning, store.StatusCancelled, store.StatusRunning, store.StatusLimit,
		store.StatusRunning, store.StatusFailed, store.StatusRunning, store.StatusDone}
	for _, d := range []store.Durability{store.Sync, store.Batched, store.Exit} {
		id := "st-" + string(d)
		for step, status := range path {
			sess := store.Session{ID: id, Project: "p", Status: status, Updated: time.Date(2026, 5, 1, 0, 0, step, 0, time.UTC), Messages: step}
			put(t, ctx, s, store.Checkpoint{Thread: id, Step: step, Status: status, Index: &sess, Durability: d})
			if !status.Ended() {
				continue
			}
			st := load(t, ctx, s, id, "")
			got, err := s.Session(ctx, id)
			if st.Step != step || st.Status != status || err != nil || got.Status != status || got.Messages != step {
				t.Fatalf("%s, step %d (%s): checkpoint %d %s, index %+v %v", d, step, status, st.Step, st.Status, got, err)
			}
		}
		list, err := s.Sessions(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range list {
			if x.ID == id && x.Status != store.StatusDone {
				t.Fatalf("%s: listed as %s", d, x.Status)
			}
		}
	}
}

// testLeases: every store takes a session's lease and gives it back, as
// often as asked, one session's apart from another's, and never calls
// lost while it holds it; giving it back twice does nothing. (A store one
// process holds has nothing to keep apart, and its lease does nothing; a
// shared store's own tests cover another process's holding it.)
func testLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	if s.Name() == "" {
		t.Error("the store has no name")
	}
	lost := make(chan string, 4)
	releaseA, err := s.Acquire(ctx, "lease-a", time.Second, func() { lost <- "a" })
	if err != nil {
		t.Fatal(err)
	}
	releaseB, err := s.Acquire(ctx, "lease-b", time.Second, func() { lost <- "b" })
	if err != nil {
		t.Fatalf("another session's lease: %v", err)
	}
	put(t, ctx, s, store.Checkpoint{Thread: "lease-a", Step: 0, Status: store.StatusDone})
	releaseA()
	releaseA()
	again, err := s.Acquire(ctx, "lease-a", time.Second, func() { lost <- "a again" })
	if err != nil {
		t.Fatalf("the lease again, once given back: %v", err)
	}
	again()
	releaseB()
	select {
	case l := <-lost:
		t.Fatalf("lease %s was lost", l)
	default:
	}
}

// testApprovals: kept by key (NUL bytes included), replaced, deleted by an
// empty value, untouched by session pruning.
func testApprovals(t *testing.T, s store.Store) {
	ctx := context.Background()
	key := "mcp\x00/repo\x00db"
	if v, err := s.Approval(ctx, key); err != nil || v != "" {
		t.Fatalf("before: %q %v", v, err)
	}
	if err := s.SetApproval(ctx, key, "sha256:abc"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetApproval(ctx, "other", "x"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Approval(ctx, key); v != "sha256:abc" {
		t.Fatalf("after: %q", v)
	}
	if err := s.SetApproval(ctx, key, "sha256:def"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Approval(ctx, key); v != "sha256:def" {
		t.Fatalf("replaced: %q", v)
	}
	if _, err := s.DeleteOlderThan(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Approval(ctx, key); v != "sha256:def" {
		t.Fatal("pruning sessions dropped an approval")
	}
	if err := s.SetApproval(ctx, key, ""); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Approval(ctx, key); v != "" {
		t.Fatalf("deleted: %q", v)
	}
	if v, _ := s.Approval(ctx, "other"); v != "x" {
		t.Fatalf("another key: %q", v)
	}
}
