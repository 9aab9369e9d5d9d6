package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/boltfile"
)

// snapshot is what a session loads as: its index entry and the newest
// checkpoint of each namespace (nil when it has none).
type snapshot struct {
	Session Session
	States  map[string]*State
}

var importNamespaces = []string{"", "subagent-1"}

// seedSessions writes n sessions named prefix0.. through the store's API
// (checkpoints with list operations, values, planned tasks, pending writes, a
// subagent namespace, and some index entries without checkpoints) into a
// store at path, and returns how each loads.
func seedSessions(t testing.TB, path, prefix string, n int) map[string]snapshot {
	t.Helper()
	ctx := context.Background()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		sess := Session{ID: id, Project: fmt.Sprint("p", i%4), Title: "session " + id, Status: StatusRunning, Created: base, Updated: base.Add(time.Duration(i) * time.Second), Messages: 2}
		if i%10 == 9 { // an index entry only: a session that never ran
			if err := db.PutSession(ctx, sess); err != nil {
				t.Fatal(err)
			}
			continue
		}
		msg := func(k int) Op {
			return Op{Kind: OpUpsert, ID: fmt.Sprint("m", k), Body: raw(fmt.Sprintf(`{"role":"user","text":%q}`, strings.Repeat(id, k+1)))}
		}
		s0 := sess
		steps := []Checkpoint{
			{Step: 0, Status: StatusRunning, Values: map[string]json.RawMessage{"n": raw(fmt.Sprint(i)), "model": raw(`"m"`)},
				Lists: map[string][]Op{"messages": {msg(0), msg(1)}, "log": {{Body: raw(`"a"`)}, {Body: raw(`"b"`)}}},
				Next:  []Task{{ID: "t1", Node: "agent", Arg: raw(`{"x":1}`)}}, Index: &s0},
			{Step: 1, Status: StatusRunning, Values: map[string]json.RawMessage{"n": raw(fmt.Sprint(i + 1))},
				Lists: map[string][]Op{"messages": {msg(2), {Kind: OpRemove, ID: "m0"}, msg(3)}},
				Next:  []Task{{ID: "t2", Node: "tools"}, {ID: "t3", Node: "tools"}}},
		}
		if i%2 == 0 {
			s2 := sess
			s2.Status, s2.Messages, s2.Updated = StatusDone, 3, sess.Updated.Add(time.Minute)
			steps = append(steps, Checkpoint{Step: 2, Status: StatusDone, Lists: map[string][]Op{"messages": {msg(1)}, "log": {{Kind: OpReset}, {Body: raw(`"c"`)}}}, Index: &s2})
		}
		for _, cp := range steps {
			cp.Thread = id
			if err := db.Put(ctx, cp); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 1 { // interrupted: a finished task's writes are pending
			if err := db.PutWrite(ctx, PendingWrite{Thread: id, Task: "t2", Writes: raw(`[{"tool":"ok"}]`)}); err != nil {
				t.Fatal(err)
			}
		}
		if i%3 == 0 {
			if err := db.Put(ctx, Checkpoint{Thread: id, Namespace: "subagent-1", Step: 0, Status: StatusDone,
				Lists: map[string][]Op{"messages": {msg(0)}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return snapshots(t, db)
}

// snapshots returns how every session of db loads.
func snapshots(t testing.TB, db *Bolt) map[string]snapshot {
	t.Helper()
	ctx := context.Background()
	all, err := db.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]snapshot{}
	for _, s := range all {
		snap := snapshot{Session: s, States: map[string]*State{}}
		for _, ns := range importNamespaces {
			st, err := db.Load(ctx, s.ID, ns)
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatalf("load %s/%s: %v", s.ID, ns, err)
			}
			snap.States[ns] = st
		}
		out[s.ID] = snap
	}
	return out
}

func openMain(t testing.TB, dir string, opts ...Option) *Bolt {
	t.Helper()
	db, err := Open(filepath.Join(dir, "sessions.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A sibling's sessions are imported with identical state, the file is
// renamed, and a second import finds nothing to do.
func TestImportSiblings(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sibling := filepath.Join(dir, "sessions.1a2b3c4d.db")
	want := seedSessions(t, sibling, "w", 300)
	db := openMain(t, dir)
	if err := db.PutSession(ctx, Session{ID: "own", Title: "main's own"}); err != nil {
		t.Fatal(err)
	}

	n, notes := ImportSiblings(ctx, db)
	if n != 300 || len(notes) != 0 {
		t.Fatalf("imported %d, notes %q", n, notes)
	}
	if _, err := os.Stat(sibling); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the imported sibling is still there: %v", err)
	}
	if _, err := os.Stat(sibling + ImportedSuffix); err != nil {
		t.Fatalf("the imported sibling was not renamed: %v", err)
	}
	got := snapshots(t, db)
	if len(got) != 301 {
		t.Fatalf("the store lists %d sessions, want 301", len(got))
	}
	for id, w := range want {
		if !reflect.DeepEqual(got[id], w) {
			t.Fatalf("session %s loads as\n%+v\nwant\n%+v", id, got[id], w)
		}
	}

	// The list numbering goes on where the sibling left it: a new message is
	// appended after the imported ones instead of overwriting one.
	if err := db.Put(ctx, Checkpoint{Thread: "w0", Step: 3, Status: StatusDone, Lists: map[string][]Op{"messages": {{Kind: OpUpsert, ID: "new", Body: raw(`"new"`)}}}}); err != nil {
		t.Fatal(err)
	}
	st, err := db.Load(ctx, "w0", "")
	if err != nil {
		t.Fatal(err)
	}
	if wantMsgs := append(bodies(want["w0"].States[""].Lists["messages"]), `new="new"`); !reflect.DeepEqual(bodies(st.Lists["messages"]), wantMsgs) {
		t.Fatalf("messages after a new step: %v, want %v", bodies(st.Lists["messages"]), wantMsgs)
	}

	n, notes = ImportSiblings(ctx, db)
	if n != 0 || len(notes) != 0 {
		t.Fatalf("second import: %d, %q", n, notes)
	}
	// Import of the renamed file itself is idempotent too.
	if n, err := db.Import(ctx, sibling+ImportedSuffix); n != 0 || err != nil {
		t.Fatalf("import of an imported file: %d, %v", n, err)
	}
}

// Whatever the store's durability, imported sessions are durable when
// Import returns.
func TestImportDurability(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src.db")
	want := seedSessions(t, src, "d", 20)
	for _, d := range []Durability{Sync, Batched, Exit} {
		t.Run(string(d), func(t *testing.T) {
			dir := t.TempDir()
			db, err := Open(filepath.Join(dir, "sessions.db"), WithDefaultDurability(d))
			if err != nil {
				t.Fatal(err)
			}
			n, err := db.Import(ctx, src)
			if n != len(want) || err != nil {
				t.Fatalf("imported %d, %v", n, err)
			}
			// A copy of the file taken before Close (which would write what is
			// still queued) holds every imported session.
			data, err := os.ReadFile(db.Path())
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			cp := filepath.Join(t.TempDir(), "copy.db")
			if err := os.WriteFile(cp, data, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err = Open(cp)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got := snapshots(t, db); !reflect.DeepEqual(got, want) {
				t.Fatalf("the file as Import left it: %d sessions, want %d", len(got), len(want))
			}
		})
	}
}

// A session ID present in both stores keeps the main store's version, and
// counts as not imported; so does an ID the main store has only as a thread.
func TestImportKeepsMainVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sibling := filepath.Join(dir, "sessions.00000000.db")
	fromSibling := seedSessions(t, sibling, "s", 10)

	db := openMain(t, dir)
	mine := Session{ID: "s0", Title: "main's s0", Status: StatusDone, Messages: 1}
	if err := db.Put(ctx, Checkpoint{Thread: "s0", Step: 7, Status: StatusDone, Values: map[string]json.RawMessage{"n": raw(`"main"`)}, Index: &mine}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutSession(ctx, Session{ID: "s9", Title: "main's s9"}); err != nil { // s9 has only an index entry there
		t.Fatal(err)
	}
	if err := db.Put(ctx, Checkpoint{Thread: "s2", Step: 1, Status: StatusRunning}); err != nil { // a thread, no index entry
		t.Fatal(err)
	}
	before := snapshots(t, db)

	n, notes := ImportSiblings(ctx, db)
	if n != 7 || len(notes) != 0 {
		t.Fatalf("imported %d (want 7), notes %q", n, notes)
	}
	got := snapshots(t, db)
	for id, w := range before {
		if !reflect.DeepEqual(got[id], w) {
			t.Errorf("main's %s was changed:\n%+v\nwant\n%+v", id, got[id], w)
		}
	}
	if _, ok := got["s2"]; ok {
		t.Errorf("s2, a thread of main without an index entry, was given the sibling's index entry")
	}
	for id, w := range fromSibling {
		if id == "s0" || id == "s2" || id == "s9" {
			continue
		}
		if !reflect.DeepEqual(got[id], w) {
			t.Errorf("imported %s differs", id)
		}
	}
}

// usedSize is how many bytes of a store file its newest meta page counts.
func usedSize(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, _, err := boltfile.ReadMeta(f)
	if err != nil {
		t.Fatal(err)
	}
	return int(m.Pgid) * int(m.PageSize)
}

// scramblePages returns a copy of a store file whose pages after the two
// meta pages, up to used bytes, have bytes [from, to) of each page replaced
// by random ones drawn from seed.
func scramblePages(good []byte, used, page, from, to int, seed int64) []byte {
	b := bytes.Clone(good)
	r := rand.New(rand.NewSource(seed))
	for off := 2 * page; off < used; off += page {
		r.Read(b[off+from : off+to])
	}
	return b
}

// A damaged sibling never faults or panics the process: it is reported by
// name and left as it is, and the main store is intact.
func TestImportDamagedSibling(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "good.db")
	seedSessions(t, src, "g", 200)
	good, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	used := usedSize(t, src)
	const page = 4096
	scramble := func(from, to int, seed int64) []byte {
		b := bytes.Clone(good)
		rand.New(rand.NewSource(seed)).Read(b[from:to])
		return b
	}
	cases := []struct {
		name string
		data []byte
		// mayImport: damage bbolt cannot see (it keeps no page checksums)
		// may import; the process must survive it all the same.
		mayImport bool
	}{
		{"cut in the first meta page", good[:50], false},
		{"cut after the first meta page", good[:page+100], false},
		{"cut at a third", good[:used/3], false},
		{"cut at half", good[:used/2], false},
		{"cut mid-page near the end", good[:used-page-page/2], false},
		{"last page missing", good[:used-page], false},
		{"garbage", scramble(0, len(good), 1), false},
		{"meta pages zeroed", append(make([]byte, 2*page), good[2*page:]...), false},
		{"pages scrambled", scramble(2*page, used, 2), true},
		{"one page scrambled", scramble(used/2/page*page, used/2/page*page+page, 3), true},
		{"page bodies scrambled", scramblePages(good, used, page, 16, page, 5), true},
		{"page headers scrambled", scramblePages(good, used, page, 0, 16, 4), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sibling := filepath.Join(dir, "sessions.deadbeef.db")
			if err := os.WriteFile(sibling, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			db := openMain(t, dir)
			if err := db.PutSession(ctx, Session{ID: "own", Title: "kept"}); err != nil {
				t.Fatal(err)
			}
			before := snapshots(t, db)

			n, notes := ImportSiblings(ctx, db)
			left, statErr := os.ReadFile(sibling)
			switch {
			case len(notes) == 1:
				if !strings.Contains(notes[0], sibling) || !strings.Contains(notes[0], "left in place") {
					t.Errorf("note: %q", notes[0])
				}
				if statErr != nil || !bytes.Equal(left, tc.data) {
					t.Errorf("the damaged sibling was not left as it was: %v", statErr)
				}
				t.Logf("imported %d; %s", n, notes[0])
			case len(notes) == 0 && tc.mayImport:
				t.Logf("imported %d: the damage was not seen", n)
			default:
				t.Fatalf("imported %d, notes %q", n, notes)
			}
			if n == 0 {
				if got := snapshots(t, db); !reflect.DeepEqual(got, before) {
					t.Errorf("the main store changed: %d sessions", len(got))
				}
			}
			if err := db.PutSession(ctx, Session{ID: "after"}); err != nil {
				t.Errorf("the main store cannot be written after: %v", err)
			}
			if _, err := db.Session(ctx, "own"); err != nil {
				t.Errorf("main's own session: %v", err)
			}
		})
	}
}

// A sibling another handle holds is reported, not waited for; once it is
// released it is imported.
func TestImportLockedSibling(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sibling := filepath.Join(dir, "sessions.0123abcd.db")
	seedSessions(t, sibling, "l", 5)
	holder, err := Open(sibling)
	if err != nil {
		t.Fatal(err)
	}
	db := openMain(t, dir)

	type result struct {
		n     int
		notes []string
	}
	done := make(chan result, 1)
	go func() {
		n, notes := ImportSiblings(ctx, db)
		done <- result{n, notes}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("ImportSiblings waits for a held sibling")
	}
	if r.n != 0 || len(r.notes) != 1 || !strings.Contains(r.notes[0], sibling) || !strings.Contains(r.notes[0], "another agent-lsp process") {
		t.Fatalf("imported %d, notes %q", r.n, r.notes)
	}
	if _, err := os.Stat(sibling); err != nil {
		t.Fatalf("the held sibling was moved: %v", err)
	}
	holder.Close()
	if n, notes := ImportSiblings(ctx, db); n != 5 || len(notes) != 0 {
		t.Fatalf("after release: imported %d, notes %q", n, notes)
	}
}

// Only files named like a sibling are imported; the rest are not touched.
func TestImportSiblingNames(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	untouched := []string{
		"sessions.db.bak",
		"sessions.xyz.db",
		"sessions.1A2B3C4D.db",   // uppercase
		"sessions.1a2b3c4.db",    // 7 digits
		"sessions.1a2b3c4d5.db",  // 9 digits
		"sessions.1a2b3c4g.db",   // not hex
		"sessions.1a2b3c4d.json", // another extension
		"sessions.1a2b3c4d",      // no extension
		"other.1a2b3c4d.db",
		"sessions.1a2b3c4d.db.imported",
		"sessions.1a2b3c4d.db.corrupt-20260101T000000Z",
	}
	src := filepath.Join(t.TempDir(), "src.db")
	seedSessions(t, src, "n", 3)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range untouched {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sessions.aaaaaaaa.db"), 0o700); err != nil { // a folder
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessions.bbbbbbbb.db"), nil, 0o600); err != nil { // never initialized
		t.Fatal(err)
	}
	db := openMain(t, dir)

	n, notes := ImportSiblings(ctx, db)
	if n != 0 || len(notes) != 0 {
		t.Fatalf("imported %d, notes %q", n, notes)
	}
	for _, name := range untouched {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s was touched: %v", name, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "sessions.aaaaaaaa.db")); err != nil || !fi.IsDir() {
		t.Errorf("the folder was touched: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions.bbbbbbbb.db"+ImportedSuffix)); err != nil {
		t.Errorf("the empty sibling was not marked imported: %v", err)
	}
	if list, _ := db.Sessions(ctx, ""); len(list) != 0 {
		t.Errorf("the store lists %d sessions", len(list))
	}
}

func TestIsSiblingStore(t *testing.T) {
	for _, tc := range []struct {
		main, name string
		want       bool
	}{
		{"/x/sessions.db", "sessions.1a2b3c4d.db", true},
		{"/x/sessions.db", "sessions.00000000.db", true},
		{"/x/sessions.db", "sessions.db", false},
		{"/x/sessions.db", "sessions.1a2b3c4d.db.imported", false},
		{"/x/sessions.db", "sessions.1a2b3c4D.db", false},
		{"/x/sessions.db", "sessions.1a2b3c4d.bolt", false},
		{"/x/sessions.db", "sessions-1a2b3c4d.db", false},
		{"/x/my.sessions.db", "my.sessions.1a2b3c4d.db", true},
		{"/x/sessions", "sessions.1a2b3c4d", true},
		{"/x/sessions", "sessions.1a2b3c4d.db", false},
	} {
		if got := IsSiblingStore(tc.main, tc.name); got != tc.want {
			t.Errorf("IsSiblingStore(%q, %q) = %v", tc.main, tc.name, got)
		}
	}
}

// Import refuses the store's own file and a missing one, with errors that
// name them.
func TestImportErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openMain(t, dir)
	for _, path := range []string{db.Path(), filepath.Join(dir, "missing.db"), dir} {
		n, err := db.Import(ctx, path)
		if n != 0 || err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("import %s: %d, %v", path, n, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	src := filepath.Join(t.TempDir(), "src.db")
	seedSessions(t, src, "c", 3)
	if n, err := db.Import(cancelled, src); n != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("import with a cancelled context: %d, %v", n, err)
	}
}

func BenchmarkImport(b *testing.B) {
	const sessions = 500
	src := filepath.Join(b.TempDir(), "src.db")
	seedSessions(b, src, "b", sessions)
	ctx := context.Background()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		db, err := Open(filepath.Join(b.TempDir(), "sessions.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		n, err := db.Import(ctx, src)
		elapsed += time.Since(start)
		b.StopTimer()
		if n != sessions || err != nil {
			b.Fatalf("imported %d, %v", n, err)
		}
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(sessions*b.N)/elapsed.Seconds(), "sessions/s")
}

// Random damage anywhere in a sibling's pages never faults the process: the
// sibling is imported or reported, and the main store goes on working.
func TestImportScrambledAnywhere(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "good.db")
	seedSessions(t, src, "r", 60)
	good, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	used := usedSize(t, src)
	r := rand.New(rand.NewSource(42))
	for i := 0; i < 40; i++ {
		data := bytes.Clone(good)
		from := 2*4096 + r.Intn(used-2*4096)
		to := min(from+1+r.Intn(3*4096), used)
		r.Read(data[from:to])
		dir := t.TempDir()
		sibling := filepath.Join(dir, "sessions.cafef00d.db")
		if err := os.WriteFile(sibling, data, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := Open(filepath.Join(dir, "sessions.db"))
		if err != nil {
			t.Fatal(err)
		}
		n, notes := ImportSiblings(ctx, db)
		if len(notes) > 0 {
			if _, err := os.Stat(sibling); err != nil {
				t.Errorf("bytes %d-%d: the reported sibling was moved: %v", from, to, err)
			}
		}
		if err := db.PutSession(ctx, Session{ID: "after"}); err != nil {
			t.Errorf("bytes %d-%d: the main store cannot be written after importing %d: %v", from, to, n, err)
		}
		db.Close()
	}
}

// cyclicMarker is the sequence of the inline bucket buildCyclicSample makes,
// to find it in the file.
const cyclicMarker = 0x0102030405060708

// buildCyclicSample writes a legacy store to path with one thread holding an
// inline bucket (sequence cyclicMarker) and a bucket on a branch page, and
// returns the file's bytes.
func buildCyclicSample(t *testing.T, path string) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		idx, _ := tx.CreateBucket(legacySessions)
		threads, _ := tx.CreateBucket(legacyThreads)
		idx.Put([]byte("c1"), []byte(`{"session":"c1"}`))
		th, _ := threads.CreateBucket([]byte("c1"))
		small, _ := th.CreateBucket([]byte("small")) // inline
		small.Put([]byte("k"), []byte("v"))
		small.SetSequence(cyclicMarker)
		big, err := th.CreateBucket([]byte("big")) // a branch page over leaves
		if err != nil {
			return err
		}
		for i := 0; i < 2000; i++ {
			big.Put([]byte(fmt.Sprintf("key-%05d", i)), bytes.Repeat([]byte("v"), 40))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A page tree with a cycle, which would make bbolt's cursor loop until memory
// runs out, is reported as damage before bbolt walks it.
func TestImportCyclicPages(t *testing.T) {
	le := binary.LittleEndian
	cases := []struct {
		name   string
		damage func(t *testing.T, data []byte)
	}{
		{"an inline bucket made a branch to itself", func(t *testing.T, data []byte) {
			seq := binary.LittleEndian.AppendUint64(nil, cyclicMarker)
			at := bytes.Index(data, seq)
			if at < 8 {
				t.Fatal("the inline bucket was not found")
			}
			page := data[at+8:]                           // after the bucket header: the inline page
			le.PutUint16(page[8:], boltfile.BranchPage)   // flags
			le.PutUint16(page[10:], 1)                    // one element
			le.PutUint64(page[boltfile.PageHeader+8:], 0) // pointing at page 0: itself
		}},
		{"a branch page pointing at itself", func(t *testing.T, data []byte) {
			for off := 2 * 4096; off+4096 <= len(data); off += 4096 {
				if le.Uint16(data[off+8:]) == boltfile.BranchPage {
					le.PutUint64(data[off+boltfile.PageHeader+8:], le.Uint64(data[off:]))
					return
				}
			}
			t.Fatal("no branch page")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sibling := filepath.Join(dir, "sessions.abcdef01.db")
			data := buildCyclicSample(t, sibling)
			if st, err := inspect(sibling); err != nil || len(st.problems) > 0 {
				t.Fatalf("the undamaged file: %v %v", st.problems, err)
			}
			tc.damage(t, data)
			if err := os.WriteFile(sibling, data, 0o600); err != nil {
				t.Fatal(err)
			}
			db := openMain(t, dir)
			done := make(chan []string, 1)
			go func() {
				_, notes := ImportSiblings(context.Background(), db)
				done <- notes
			}()
			select {
			case notes := <-done:
				if len(notes) != 1 || !strings.Contains(notes[0], "damaged") || !strings.Contains(notes[0], sibling) {
					t.Fatalf("notes %q", notes)
				}
				t.Log(notes[0])
			case <-time.After(2 * time.Minute):
				t.Fatal("the import loops")
			}
			if _, err := os.Stat(sibling); err != nil {
				t.Fatalf("the damaged sibling was moved: %v", err)
			}
		})
	}
}
