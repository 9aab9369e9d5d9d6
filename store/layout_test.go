package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzListOps applies the same steps of list operations to a bbolt store
// and to the memory store and checks that both load the same lists. Each
// pair of input bytes is one operation: its kind, a list (two of whose
// names are prefixes of the third's), an ID and whether a step ends after
// it; bulk operations append 40 items (pages of them) or remove the newest
// 40 bulk items. OpAppend is used as its writers use it: only for an ID no
// item has.
// Every other input commits each step on its own.
//
// The work per input is bounded: only the first maxFuzzOps operations run,
// and each input's thread is deleted when it is checked. The store is shared
// by all the inputs of a worker; unbounded, it grew past a gigabyte in a few
// minutes and one input took more than the fuzzing engine's 10 s per input,
// which kills the worker ("hung or terminated unexpectedly", seen in CI).
func FuzzListOps(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 2, 0, 3, 5, 0, 9})
	f.Add([]byte{4, 0, 4, 1, 1, 0, 0, 0, 2, 0x80, 4, 0})
	f.Add([]byte{0, 0x11, 0, 0x21, 0, 0x31, 1, 0x21, 0, 0x21, 2, 0x90, 0, 0x11})
	// Pages of items, then removes that empty leaves, then lookups: one
	// transaction (an even input runs in Exit mode).
	f.Add([]byte{5, 0x01, 5, 0x01, 5, 0x01, 5, 0x09, 6, 0x01, 6, 0x01, 1, 0x01, 0, 0x02, 4, 0x03, 1, 0x02})
	db, err := Open(filepath.Join(f.TempDir(), "s.db"), WithDefaultDurability(Exit))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	// Commits stay one per step in Sync mode, without their fdatasync: this
	// compares what the stores hold, not what reaches the disk, and the
	// system call made most of an input's time.
	db.db.NoSync = true
	var threads atomic.Int64
	lists := []string{"m", "messages", "m2"}
	f.Fuzz(func(t *testing.T, in []byte) {
		in = in[:min(len(in), 2*maxFuzzOps)]
		n := threads.Add(1)
		thread := fmt.Sprint("fuzz-", n)
		ctx := context.Background()
		d := Exit // one commit at the end; else one per step
		if n%2 == 1 {
			d = Sync
		}
		mem := NewMemory()
		m := newFuzzLists(lists)
		step := 0
		flush := func(status Status) {
			cp := Checkpoint{Thread: thread, Step: step, Status: status, Lists: m.ops, Durability: d}
			for _, s := range []Checkpointer{db, mem} {
				if err := s.Put(ctx, cp); err != nil {
					t.Fatal(err)
				}
			}
			step++
			m.ops = map[string][]Op{}
		}
		for i := 0; i+1 < len(in); i += 2 {
			list := lists[int(in[i+1]>>4)%len(lists)]
			id := ""
			if in[i+1]&0x7 != 0 {
				id = fmt.Sprint("id", in[i+1]&0x7)
			}
			if in[i]%7 >= 5 { // bulk: a page or more of items appended, or the newest 40 removed
				m.bulk(list, i, in[i]%7 == 5)
			} else {
				body := json.RawMessage(fmt.Sprintf(`{"op":%d,"text":%q}`, i, strings.Repeat("x", int(in[i])*7)))
				m.single(list, in[i]%5, id, body)
			}
			if in[i+1]&0x8 != 0 {
				flush(StatusRunning)
			}
		}
		flush(StatusDone)
		checkSameLists(t, db, mem, thread, lists)
		if _, err := db.DeleteSession(ctx, thread); err != nil {
			t.Fatal(err)
		}
	})
}

// fuzzLists is what FuzzListOps's operations of one step are and what the
// lists hold after them.
type fuzzLists struct {
	present map[string]map[string]bool // list -> IDs present
	order   map[string][]string        // list -> bulk IDs appended, oldest first
	ops     map[string][]Op            // the step's operations by list
}

func newFuzzLists(lists []string) *fuzzLists {
	m := &fuzzLists{present: map[string]map[string]bool{}, order: map[string][]string{}, ops: map[string][]Op{}}
	for _, l := range lists {
		m.present[l] = map[string]bool{}
	}
	return m
}

// bulk appends 40 items of 150 bytes (a page or more) to list, or removes
// its newest 40 bulk items; i numbers the operation.
func (m *fuzzLists) bulk(list string, i int, add bool) {
	body := fmt.Sprintf(`{"op":%d,"text":%q}`, i, strings.Repeat("y", 150))
	for j := range 40 {
		if add {
			bid := fmt.Sprintf("bulk%d-%d", i, j)
			m.ops[list] = append(m.ops[list], Op{Kind: OpAppend, ID: bid, Body: json.RawMessage(body)})
			m.present[list][bid], m.order[list] = true, append(m.order[list], bid)
		} else if n := len(m.order[list]); n > 0 {
			bid := m.order[list][n-1]
			m.order[list] = m.order[list][:n-1]
			m.ops[list] = append(m.ops[list], Op{Kind: OpRemove, ID: bid})
			delete(m.present[list], bid)
		}
	}
}

// single adds one operation on list: kind 0 upserts id, 1 removes it, 2
// resets the list, 3 and 4 append id (upsert it when it is present, as
// writers append only what is new).
func (m *fuzzLists) single(list string, kind byte, id string, body json.RawMessage) {
	var op Op
	switch kind {
	case 0:
		op = Op{Kind: OpUpsert, ID: id, Body: body}
	case 1:
		op = Op{Kind: OpRemove, ID: id}
	case 2:
		op = Op{Kind: OpReset}
	case 3, 4:
		op = Op{Kind: OpAppend, ID: id, Body: body}
		if id != "" && m.present[list][id] {
			op.Kind = OpUpsert // a writer appends only what is new
		}
	}
	switch op.Kind {
	case OpUpsert, OpAppend:
		if id != "" {
			m.present[list][id] = true
		}
	case OpRemove:
		delete(m.present[list], id)
	case OpReset:
		clear(m.present[list])
	}
	m.ops[list] = append(m.ops[list], op)
}

// checkSameLists checks that db and mem load the same lists of thread.
func checkSameLists(t *testing.T, db, mem Checkpointer, thread string, lists []string) {
	t.Helper()
	ctx := context.Background()
	got, err := db.Load(ctx, thread, "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := mem.Load(ctx, thread, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		if len(got.Lists[l]) == 0 && len(want.Lists[l]) == 0 {
			continue
		}
		if !reflect.DeepEqual(itemStrings(got.Lists[l]), itemStrings(want.Lists[l])) {
			t.Fatalf("list %s:\nbbolt  %v\nmemory %v", l, itemStrings(got.Lists[l]), itemStrings(want.Lists[l]))
		}
	}
}

// maxFuzzOps bounds the operations of one FuzzListOps input: 40 bulk
// operations already span pages of items.
const maxFuzzOps = 256

func itemStrings(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID + "=" + string(it.Body)
	}
	return out
}

// A step that appends a message and moves the head rewrites the path to
// one leaf: the meta page, the freelist, the root bucket's branch and leaf
// (50 other sessions), the session's branch and its last leaf: six pages
// (bbolt's own count of the pages each commit writes), and one more at the
// steps whose message fills the leaf (every third or fourth, for 1 KB
// messages). The layout of format 2 wrote twelve to fourteen: a page per
// nested bucket on the way (threads, the thread, its namespace, its lists,
// the list, items, IDs) and the session index's.
func TestStepWritesFewPages(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "s.db"), WithDefaultDurability(Sync))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for i := range 50 { // other sessions: the root bucket spans pages
		db.PutSession(ctx, Session{ID: fmt.Sprintf("other-%02d", i), Title: strings.Repeat("a title ", 10)})
	}
	texts := w1Corpus(t)
	const steps = 600
	var writes, worst int64
	for i := range steps {
		msg, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("01JMSG%06d", i), "content": texts[i%len(texts)]})
		before := writesOf(db)
		err := db.Put(ctx, Checkpoint{Thread: "s", Step: i, Status: StatusRunning, Next: []Task{{ID: fmt.Sprint("t", i), Node: "agent"}},
			Lists: map[string][]Op{"messages": {{Kind: OpAppend, ID: fmt.Sprintf("01JMSG%06d", i), Body: msg}}},
			Index: &Session{ID: "s", Title: "the session", Messages: i + 1}})
		if err != nil {
			t.Fatal(err)
		}
		if i >= 100 { // past the first pages of the session
			w := writesOf(db) - before
			writes += w
			worst = max(worst, w)
		}
	}
	mean := float64(writes) / float64(steps-100)
	t.Logf("pages written per step: mean %.2f, worst %d", mean, worst)
	if mean > 7.25 || worst > 9 {
		t.Fatalf("a step writes %.2f pages on average, %d at worst; want at most 7.25 and 9", mean, worst)
	}
}

// w1Corpus is 1 KB texts of this repository's source, as W1 uses.
func w1Corpus(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("*.go")
	var corpus []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			corpus = append(corpus, data...)
		}
	}
	var texts []string
	for i := 0; i+1000 <= len(corpus) && len(texts) < 128; i += 1000 {
		texts = append(texts, string(corpus[i:i+1000]))
	}
	if len(texts) < 16 {
		t.Fatalf("only %d texts", len(texts))
	}
	return texts
}

// writesOf is how many page writes db's commits have made.
func writesOf(db *Bolt) int64 {
	st := db.db.Stats()
	return st.TxStats.GetWrite()
}

// A run whose steps are written in one transaction (Exit mode) removes a
// page or more of its newest messages, then an older one and replaces
// another: bbolt's walk back over the list stops at the leaves the first
// removes emptied, and the lookup must go on forward (found by review: the
// older message came back, the replaced one twice).
func TestRemoveAfterRemovesInOneTransaction(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mem := NewMemory()
	body := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"i":%d,"t":%q}`, i, strings.Repeat(fmt.Sprint(i), 60)))
	}
	put := func(ctx context.Context, cp Checkpoint) {
		t.Helper()
		for _, s := range []Checkpointer{db, mem} {
			if err := s.Put(ctx, cp); err != nil {
				t.Fatal(err)
			}
		}
	}
	var ops, rm []Op
	for i := range 300 {
		ops = append(ops, Op{Kind: OpAppend, ID: fmt.Sprintf("m%03d", i), Body: body(i)})
	}
	for i := 150; i < 290; i++ {
		rm = append(rm, Op{Kind: OpRemove, ID: fmt.Sprintf("m%03d", i)})
	}
	put(ctx, Checkpoint{Thread: "t", Step: 0, Status: StatusDone, Lists: map[string][]Op{"messages": ops}, Durability: Sync})
	put(ctx, Checkpoint{Thread: "t", Step: 1, Status: StatusRunning, Lists: map[string][]Op{"messages": rm}, Durability: Exit})
	put(ctx, Checkpoint{Thread: "t", Step: 2, Status: StatusRunning, Lists: map[string][]Op{"messages": {{Kind: OpRemove, ID: "m010"}, {Kind: OpUpsert, ID: "m020", Body: body(-20)}}}, Durability: Exit})
	put(ctx, Checkpoint{Thread: "t", Step: 3, Status: StatusDone, Durability: Exit})
	got, err := db.Load(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := mem.Load(ctx, "t", "")
	if !reflect.DeepEqual(itemStrings(got.Lists["messages"]), itemStrings(want.Lists["messages"])) {
		t.Fatalf("bbolt loads %d messages, the memory store %d", len(got.Lists["messages"]), len(want.Lists["messages"]))
	}
}

// Thread IDs of any bytes (empty, prefixes of each other, holding 0x00 or
// 0x01) keep their namespaces apart: each thread is listed once, deleting
// one deletes only its own.
func TestThreadNamesStayApart(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	threads := []string{"", "a", "ab", "a\x00b", "a\x01", strings.Repeat("x", 200)}
	for _, th := range threads {
		for _, ns := range []string{"sub", "", "sub\x00"} {
			if err := db.Put(ctx, Checkpoint{Thread: th, Namespace: ns, Step: 1, Status: StatusDone, Values: map[string]json.RawMessage{"v": json.RawMessage(fmt.Sprintf("%q", th+"/"+ns))}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids, err := db.sessionIDs()
	if err != nil || len(ids) != len(threads) {
		t.Fatalf("threads listed: %v %v", ids, err)
	}
	if _, err := db.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, th := range threads {
		for _, ns := range []string{"sub", "", "sub\x00"} {
			s, err := db.Load(ctx, th, ns)
			if th == "a" {
				if err == nil {
					t.Errorf("%q/%q survived its session's deletion", th, ns)
				}
				continue
			}
			if err != nil || string(s.Values["v"]) != fmt.Sprintf("%q", th+"/"+ns) {
				t.Errorf("%q/%q: %+v %v", th, ns, s, err)
			}
		}
	}
}

// headStep reads the step where json.Marshal put it, and decodes anything
// else in full, as the store did before.
func TestHeadStep(t *testing.T) {
	canonical, _ := json.Marshal(head{Step: 1234, Status: "running", Next: []Task{{ID: "t", Node: "tools", Arg: json.RawMessage(`[0]`)}}, Updated: time.Now()})
	tests := []struct {
		raw  string
		step int
		bad  bool
	}{
		{string(canonical), 1234, false},
		{`{"step":0,"status":"done"}`, 0, false},
		{`{"step":7}`, 7, false},
		{`{"status":"done","step":9}`, 9, false},     // another order: decoded
		{`{"step": 12, "status":"done"}`, 12, false}, // spaces: decoded
		{`{"step":012}`, 0, true},
		{`{"step":-3}`, -3, false},
		{`{"step":99999999999999999999}`, 0, true},
		{`{"step":5`, 0, true},
		{`not json`, 0, true},
	}
	for _, tt := range tests {
		step, err := headStep([]byte(tt.raw))
		if (err != nil) != tt.bad || (!tt.bad && step != tt.step) {
			t.Errorf("headStep(%s) = %d, %v; want %d (error: %v)", tt.raw, step, err, tt.step, tt.bad)
		}
	}
}
