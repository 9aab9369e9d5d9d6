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
)

// FuzzListOps applies the same steps of list operations to a bbolt store
// and to the memory store and checks that both load the same lists. Each
// pair of input bytes is one operation: its kind, a list (two of whose
// names are prefixes of the third's), an ID and whether a step ends after
// it. OpAppend is used as its writers use it: only for an ID no item has.
// Every other input commits each step on its own.
func FuzzListOps(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 2, 0, 3, 5, 0, 9})
	f.Add([]byte{4, 0, 4, 1, 1, 0, 0, 0, 2, 0x80, 4, 0})
	f.Add([]byte{0, 0x11, 0, 0x21, 0, 0x31, 1, 0x21, 0, 0x21, 2, 0x90, 0, 0x11})
	db, err := Open(filepath.Join(f.TempDir(), "s.db"), WithDefaultDurability(Exit))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	var threads atomic.Int64
	lists := []string{"m", "messages", "m2"}
	f.Fuzz(func(t *testing.T, in []byte) {
		n := threads.Add(1)
		thread := fmt.Sprint("fuzz-", n)
		ctx := context.Background()
		if n%2 == 1 { // a commit per step; else one at the end (Exit)
			ctx = WithDurability(ctx, Sync)
		}
		mem := NewMemory()
		present := map[string]map[string]bool{} // list -> IDs present
		for _, l := range lists {
			present[l] = map[string]bool{}
		}
		step := 0
		ops := map[string][]Op{}
		flush := func(status Status) {
			cp := Checkpoint{Thread: thread, Step: step, Status: status, Lists: ops}
			for _, s := range []Checkpointer{db, mem} {
				if err := s.Put(ctx, cp); err != nil {
					t.Fatal(err)
				}
			}
			step++
			ops = map[string][]Op{}
		}
		for i := 0; i+1 < len(in); i += 2 {
			list := lists[int(in[i+1]>>4)%len(lists)]
			id := ""
			if in[i+1]&0x7 != 0 {
				id = fmt.Sprint("id", in[i+1]&0x7)
			}
			body := json.RawMessage(fmt.Sprintf(`{"op":%d,"text":%q}`, i, strings.Repeat("x", int(in[i])*7)))
			var op Op
			switch in[i] % 5 {
			case 0:
				op = Op{Kind: OpUpsert, ID: id, Body: body}
			case 1:
				op = Op{Kind: OpRemove, ID: id}
			case 2:
				op = Op{Kind: OpReset}
			case 3, 4:
				op = Op{Kind: OpAppend, ID: id, Body: body}
				if id != "" && present[list][id] {
					op.Kind = OpUpsert // a writer appends only what is new
				}
			}
			switch op.Kind {
			case OpUpsert, OpAppend:
				if id != "" {
					present[list][id] = true
				}
			case OpRemove:
				delete(present[list], id)
			case OpReset:
				clear(present[list])
			}
			ops[list] = append(ops[list], op)
			if in[i+1]&0x8 != 0 {
				flush(StatusRunning)
			}
		}
		flush(StatusDone)
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
	})
}

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
