package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/boltfile"

	"github.com/agent-lsp/agent-lsp/store/internal/layout"
)

// corpusStore is a store file like a user's, generated from a seed, and
// what it holds: every session's record and the checkpoint of each of its
// namespaces, and the approvals.
type corpusStore struct {
	data      []byte
	sessions  map[string]Session
	states    map[string]map[string]*State // session -> namespace -> state
	approvals map[string]string
}

// genCorpusStore writes a store of sessions of agent turns (messages of
// this repository's source and of random text, some long enough for zstd,
// replaced and removed ones), values, pending writes, subagent namespaces,
// sessions deleted (their pages free) and approvals.
func genCorpusStore(t *testing.T, seed int64) *corpusStore {
	t.Helper()
	g := corpusGen{t: t, r: rand.New(rand.NewSource(seed))}
	path := filepath.Join(memDir(t), "corpus.db")
	db, err := Open(path, WithDefaultDurability(Sync))
	if err != nil {
		t.Fatal(err)
	}
	db.db.NoSync = true
	clock := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC) // the same file for the same seed
	db.now = func() time.Time { clock = clock.Add(1234567 * time.Nanosecond); return clock }
	ctx := context.Background()
	for i, n := 0, 8+g.r.Intn(8); i < n; i++ {
		g.session(ctx, db, i)
	}
	for i, n := 0, 1+g.r.Intn(3); i < n; i++ { // deleted sessions: their pages are free
		id := fmt.Sprintf("gone-%d", i)
		for step := 0; step < 10; step++ {
			db.Put(ctx, Checkpoint{Thread: id, Step: step, Status: StatusRunning, Index: &Session{ID: id},
				Lists: map[string][]Op{"messages": {{Kind: OpAppend, ID: fmt.Sprint(step), Body: mustJSON(t, g.text())}}}})
		}
		db.DeleteSession(ctx, id)
	}
	c := &corpusStore{sessions: map[string]Session{}, states: map[string]map[string]*State{}, approvals: map[string]string{}}
	for i := 0; i < 3; i++ {
		k := fmt.Sprintf("mcp\x00/repo/%d\x00server", i)
		c.approvals[k] = fmt.Sprintf("sha256:%x", g.r.Int63())
		db.SetApproval(ctx, k, c.approvals[k])
	}
	c.snapshot(t, db)
	db.Close()
	if c.data, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	return c
}

// corpusGen writes a corpus store's sessions from its seed, and nothing
// else: the same seed makes the same file.
type corpusGen struct {
	t *testing.T
	r *rand.Rand
}

// corpusWords are what the corpus's texts are made of: code-like text,
// which compresses as source does.
var corpusWords = strings.Fields(`func return if err != nil { } ( ) := store session the a of to in
	message tool call result json bytes len for range append make string int error ctx context
	package import "fmt" t.Fatal greet.go main.go Hello, name + ; // TODO: read file write edit`)

// text is a message's text: code-like words, or random text
// (incompressible), mostly under 1.6 KB, sometimes long enough for zstd.
func (g *corpusGen) text() string {
	n := 100 + g.r.Intn(1500)
	if g.r.Intn(8) == 0 {
		n = 5000 + g.r.Intn(4000)
	}
	if g.r.Intn(3) == 0 {
		b := make([]byte, n*3/4)
		g.r.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	var s strings.Builder
	for s.Len() < n {
		s.WriteString(corpusWords[g.r.Intn(len(corpusWords))])
		s.WriteByte(" \n"[g.r.Intn(8)/7])
	}
	return s.String()[:n]
}

// session writes session i: steps of agent turns (messages appended,
// replaced and removed, values, the index), sometimes a pending write and a
// subagent's namespace.
func (g *corpusGen) session(ctx context.Context, db *Bolt, i int) {
	t, r := g.t, g.r
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	id := fmt.Sprintf("s%02d-%x", i, r.Int31())
	sess := Session{ID: id, Project: fmt.Sprint("p", r.Intn(3)), Title: "about " + g.text()[:20], Status: StatusRunning, Created: base, Updated: base.Add(time.Duration(i) * time.Minute)}
	steps := 2 + r.Intn(30)
	for step := 0; step < steps; step++ {
		ops := []Op{{Kind: OpAppend, ID: fmt.Sprintf("m%03d", 2*step), Body: mustJSON(t, map[string]string{"role": "ai", "content": g.text()})},
			{Kind: OpAppend, ID: fmt.Sprintf("m%03d", 2*step+1), Body: mustJSON(t, map[string]string{"role": "tool", "content": g.text()})}}
		if step > 2 && r.Intn(5) == 0 {
			ops = append(ops, Op{Kind: OpUpsert, ID: fmt.Sprintf("m%03d", r.Intn(2*step)), Body: mustJSON(t, map[string]string{"role": "ai", "content": "edited " + g.text()})})
		}
		if step > 2 && r.Intn(7) == 0 {
			ops = append(ops, Op{Kind: OpRemove, ID: fmt.Sprintf("m%03d", r.Intn(2*step))})
		}
		cp := Checkpoint{Thread: id, Step: step, Status: StatusRunning, Lists: map[string][]Op{"messages": ops},
			Next: []Task{{ID: fmt.Sprintf("task-%d", step), Node: "tools", Arg: mustJSON(t, map[string]int{"i": step})}}}
		if step == 0 || r.Intn(6) == 0 {
			cp.Values = map[string]json.RawMessage{"project": mustJSON(t, sess.Project), "summary": mustJSON(t, g.text())}
		}
		if step == steps-1 && r.Intn(2) == 0 {
			cp.Status, cp.Next = StatusDone, nil
		}
		s := sess
		s.Status, s.Messages, s.Updated = cp.Status, 2*step+2, sess.Updated.Add(time.Duration(step)*time.Second)
		cp.Index = &s
		if err := db.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	if r.Intn(3) == 0 {
		db.PutWrite(ctx, PendingWrite{Thread: id, Task: fmt.Sprintf("task-%d", steps-1), Writes: mustJSON(t, []string{g.text()})})
	}
	if r.Intn(3) == 0 {
		ns := fmt.Sprintf("subagent-%08x", r.Int31())
		for step, n := 0, 1+r.Intn(6); step < n; step++ {
			db.Put(ctx, Checkpoint{Thread: id, Namespace: ns, Step: step, Status: StatusRunning,
				Lists: map[string][]Op{"messages": {{Kind: OpAppend, ID: fmt.Sprintf("x%d", step), Body: mustJSON(t, g.text())}}}})
		}
	}
}

// memDir is a new directory in memory (/dev/shm) where there is one, else
// on disk (t.TempDir): the corpus's stores are opened, salvaged and synced
// hundreds of times, and the test measures none of it.
func memDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/dev/shm", "agent-lsp-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// snapshot records what db holds as the corpus's truth.
func (c *corpusStore) snapshot(t *testing.T, db *Bolt) {
	ctx := context.Background()
	list, err := db.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		c.sessions[s.ID] = s
		c.states[s.ID] = map[string]*State{}
	}
	db.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			if thread, ns, ok := layout.ParseThreadBucket(name); ok && c.states[thread] != nil {
				st, err := db.Load(ctx, thread, ns)
				if err != nil {
					t.Fatalf("the undamaged corpus: %v", err)
				}
				c.states[thread][ns] = st
			}
			return nil
		})
	})
}

// pageSets returns the pages of the corpus file bbolt uses (meta, freelist
// and every page of a tree), those of the root bucket's tree and the
// freelist (whose damage may hide which sessions it touched), and each
// session's own.
func (c *corpusStore) pageSets(t *testing.T) (used []uint64, shared map[uint64]bool, own map[string]map[uint64]bool) {
	f, err := boltfile.Open(bytes.NewReader(c.data), int64(len(c.data)))
	if err != nil {
		t.Fatal(err)
	}
	m := f.Meta()
	shared = map[uint64]bool{0: true, 1: true}
	for _, id := range f.TreePages(f.Root(), "root") {
		shared[id] = true
	}
	fl := parseFreelistPages(c.data, m)
	for _, id := range fl {
		shared[id] = true
	}
	own = map[string]map[uint64]bool{}
	all := map[uint64]bool{}
	for id := range shared {
		all[id] = true
	}
	f.Walk(f.Root(), "root", func(k, v []byte, bucket bool) error {
		b, err := boltfile.ParseBucket(bytes.Clone(v))
		if err != nil {
			t.Fatal(err)
		}
		thread, _, ok := layout.ParseThreadBucket(k)
		for _, id := range f.TreePages(b, string(k)) {
			all[id] = true
			if ok {
				if own[thread] == nil {
					own[thread] = map[uint64]bool{}
				}
				own[thread][id] = true
			}
		}
		return nil
	})
	for id := range all {
		used = append(used, id)
	}
	slices.Sort(used)
	return used, shared, own
}

// parseFreelistPages returns the freelist's page and its overflow pages.
func parseFreelistPages(data []byte, m boltfile.Meta) []uint64 {
	off := m.Freelist * uint64(m.PageSize)
	overflow := uint64(binary.LittleEndian.Uint32(data[off+12:]))
	var out []uint64
	for i := uint64(0); i <= overflow; i++ {
		out = append(out, m.Freelist+i)
	}
	return out
}

// trialOutcome is how one damaged copy of a corpus store fared.
type trialOutcome int

const (
	outcomeSame     trialOutcome = iota // everything reads as it was, nothing reported
	outcomeReported                     // damage was reported; what differs is named
	outcomeSalvaged                     // the file was salvaged (or read through a salvaged copy)
)

// The fault-injection corpus: copies of generated stores with 1 to 8 bits
// flipped in the pages bbolt uses, opened as a user would (half with Open,
// which salvages a damaged file, half with OpenReadOnly, which reads a
// salvaged copy and leaves the file as it is). Nothing crashes or hangs;
// nothing reads differently from what was stored unless the session is
// named in what the store reported (the salvage's report or a warning); a
// damaged approval is named; the salvage keeps every session none of whose
// pages was hit (when the damage did not reach the root bucket's pages, the
// meta pages or the freelist, which can hide what it touched); and a
// salvaged store takes writes.
func TestDamageCorpus(t *testing.T) {
	const stores, trials = 4, 50  // 200 damaged stores
	t.Setenv("TMPDIR", memDir(t)) // the copies read-only opens read through
	seed := int64(100)            // AGENT_LSP_CORPUS_SEED explores other corpora
	if v, err := strconv.ParseInt(os.Getenv("AGENT_LSP_CORPUS_SEED"), 10, 64); err == nil {
		seed = v
	}
	var counts [3]int
	for s := 0; s < stores; s++ {
		c := genCorpusStore(t, seed+int64(s))
		used, shared, own := c.pageSets(t)
		const pageSize = 4096
		for i := 0; i < trials; i++ {
			r := rand.New(rand.NewSource(seed*100000 + int64(s*1000+i)))
			data := bytes.Clone(c.data)
			hit := map[uint64]bool{}
			flips := 1 + r.Intn(8)
			for f := 0; f < flips; f++ {
				page := used[r.Intn(len(used))]
				at := int(page)*pageSize + r.Intn(pageSize)
				data[at] ^= 1 << r.Intn(8)
				hit[page] = true
			}
			name := fmt.Sprintf("store %d trial %d (%d flips in pages %v)", s, i, flips, mapKeys(hit))
			out := runTrial(t, name, c, data, i%2 == 1, hit, shared, own)
			counts[out]++
		}
	}
	t.Logf("%d damaged stores: %d read as they were, %d reported damage, %d salvaged; 0 silent changes, 0 crashes",
		stores*trials, counts[outcomeSame], counts[outcomeReported], counts[outcomeSalvaged])
}

func mapKeys(m map[uint64]bool) []uint64 {
	var out []uint64
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// trial is one damaged copy of a corpus store (TestDamageCorpus): which
// pages its damage hit, and how the store opened on it fared.
type trial struct {
	name        string
	c           *corpusStore
	data        []byte
	readOnly    bool
	hit, shared map[uint64]bool
	own         map[string]map[uint64]bool
	path        string
	db          *Bolt
	warned      []string
}

// reading is how one session read in a trial.
type reading struct {
	differs   bool
	silentNSs []string // namespaces that loaded as data, differently
	why       []string
}

// runTrial opens one damaged copy and checks it (TestDamageCorpus).
func runTrial(t *testing.T, name string, c *corpusStore, data []byte, readOnly bool, hit, shared map[uint64]bool, own map[string]map[uint64]bool) trialOutcome {
	t.Helper()
	tr := &trial{name: name, c: c, data: data, readOnly: readOnly, hit: hit, shared: shared, own: own,
		path: filepath.Join(memDir(t), "sessions.db")}
	if err := os.WriteFile(tr.path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	warn := WithWarn(func(m string) { tr.warned = append(tr.warned, m) })
	var err error
	if readOnly {
		tr.db, err = OpenReadOnly(tr.path, warn)
	} else {
		tr.db, err = Open(tr.path, warn)
	}
	if err != nil {
		// A store that cannot be opened is reported as a whole: nothing is
		// returned as data.
		t.Logf("%s: open: %v", name, err)
		return outcomeReported
	}
	defer tr.db.Close()
	// Everything is read first: what the reads meet is reported as they go.
	read, listed, approvals := tr.read(t)
	return tr.judge(t, read, listed, approvals)
}

// read reads every session, namespace and approval the corpus stored.
func (tr *trial) read(t *testing.T) (read map[string]*reading, listed map[string]Session, approvals map[string]string) {
	ctx, db, c := context.Background(), tr.db, tr.c
	list, lerr := db.Sessions(ctx, "")
	listed = map[string]Session{}
	for _, s := range list {
		listed[s.ID] = s
	}
	read = map[string]*reading{}
	for id, want := range c.sessions {
		got, serr := db.Session(ctx, id)
		rd := &reading{differs: serr != nil || !reflect.DeepEqual(got, want) || (lerr == nil && !reflect.DeepEqual(listed[id], want))}
		if rd.differs {
			rd.why = append(rd.why, fmt.Sprintf("record %v, listed %v", serr, lerr == nil && !reflect.DeepEqual(listed[id], want)))
		}
		for ns, wantSt := range c.states[id] {
			st, err := db.Load(ctx, id, ns)
			if err != nil || !reflect.DeepEqual(st, wantSt) {
				rd.why = append(rd.why, fmt.Sprintf("namespace %q: %v", ns, err))
				rd.differs = true
				if err == nil {
					rd.silentNSs = append(rd.silentNSs, ns)
				}
			}
		}
		read[id] = rd
	}
	approvals = map[string]string{}
	for k := range c.approvals {
		approvals[k], _ = db.Approval(ctx, k)
	}
	return read, listed, approvals
}

// judge checks what a trial read against what the store reported.
func (tr *trial) judge(t *testing.T, read map[string]*reading, listed map[string]Session, approvals map[string]string) trialOutcome {
	db, name := tr.db, tr.name
	report := db.Recovered() + "\n" + strings.Join(tr.warned, "\n")
	named := func(id string) bool { return strings.Contains(report, fmt.Sprintf("%q", id)) }
	global := strings.Contains(report, "no session could be named") || strings.Contains(report, "meta page")
	rollback := strings.Contains(report, "meta page") // the file is read as of the commit before
	salvaged := db.Recovered() != "" || (tr.readOnly && strings.Contains(report, "salvaged"))
	for id, rd := range read {
		for _, ns := range rd.silentNSs {
			if !named(id) && !rollback {
				t.Errorf("%s: SILENT CHANGE: session %q namespace %q loads differently and nothing named it\nreport: %s", name, id, ns, report)
			}
		}
		if rd.differs && !named(id) && !global {
			t.Errorf("%s: session %q reads differently (%s) and nothing named it\nreport: %s", name, id, strings.Join(rd.why, "; "), report)
		}
		intact := true
		for p := range tr.hit {
			intact = intact && !tr.own[id][p] && !tr.shared[p]
		}
		if salvaged && intact && rd.differs {
			t.Errorf("%s: the salvage lost session %q, none of whose pages was damaged\nreport: %s", name, id, report)
		}
	}
	for id := range listed {
		if _, ok := tr.c.sessions[id]; !ok && !named(id) && !global {
			t.Errorf("%s: a session %q that was never stored is listed, and nothing named it", name, id)
		}
	}
	for k, want := range tr.c.approvals {
		if got := approvals[k]; got != want && !strings.Contains(report, fmt.Sprintf("%q", k)) && !global {
			t.Errorf("%s: approval %q reads %q, not %q, and nothing named it", name, k, got, want)
		}
	}
	if tr.readOnly {
		if left, err := os.ReadFile(tr.path); err != nil || !bytes.Equal(left, tr.data) {
			t.Errorf("%s: a read-only open changed the file (%v)", name, err)
		}
		if aside, _ := filepath.Glob(tr.path + ".corrupt-*"); len(aside) > 0 {
			t.Errorf("%s: a read-only open moved the file aside", name)
		}
	} else if err := db.Put(context.Background(), Checkpoint{Thread: "after", Step: 1, Status: StatusDone}); err != nil && db.Recovered() != "" {
		t.Errorf("%s: the salvaged store takes no write: %v", name, err)
	}
	switch {
	case salvaged:
		return outcomeSalvaged
	case strings.TrimSpace(report) != "" || db.Damage() > 0:
		return outcomeReported
	}
	return outcomeSame
}

// victimLeaves picks the session of c with the most pages of its own and
// returns it with the leaf pages of its messages (at least three).
func victimLeaves(t *testing.T, c *corpusStore) (victim string, leaves []uint64) {
	t.Helper()
	_, _, own := c.pageSets(t)
	// The session with the most pages of its own: a leaf in the middle of
	// its messages is made to lose its last element (its count lowered),
	// which bbolt would read as a shorter page.
	for id, pages := range own {
		if victim == "" || len(pages) > len(own[victim]) {
			victim = id
		}
	}
	f, err := boltfile.Open(bytes.NewReader(c.data), int64(len(c.data)))
	if err != nil {
		t.Fatal(err)
	}
	f.Walk(f.Root(), "root", func(k, v []byte, bucket bool) error {
		if bytes.Equal(k, layout.ThreadBucket(victim, "")) {
			b, _ := boltfile.ParseBucket(bytes.Clone(v))
			for _, p := range f.TreePages(b, "victim") {
				if c.data[p*4096+8] == boltfile.LeafPage && binary.LittleEndian.Uint64(c.data[p*4096:]) == p {
					leaves = append(leaves, p)
				}
			}
		}
		return nil
	})
	if len(leaves) < 3 {
		t.Fatalf("the session has %d leaves", len(leaves))
	}
	return victim, leaves
}

// A salvage keeps every session that can be read whole, the readable
// records of a damaged one, and says which is which; the damaged file is
// kept aside, and the salvaged store goes on.
func TestSalvageKeepsWhatCanBeRead(t *testing.T) {
	c := genCorpusStore(t, 7)
	victim, leaves := victimLeaves(t, c)
	page := leaves[len(leaves)/2]
	data := bytes.Clone(c.data)
	data[page*4096+10]-- // the count: the page's last element disappears
	path := filepath.Join(t.TempDir(), "sessions.db")
	os.WriteFile(path, data, 0o600)
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep := db.Recovered()
	t.Log(rep)
	if !strings.Contains(rep, fmt.Sprintf("kept in part (%q)", victim)) || !strings.Contains(rep, "moved to "+path+".corrupt-") {
		t.Fatalf("report: %s", rep)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Fatalf("the damaged file was not kept: %v", aside)
	} else if kept, _ := os.ReadFile(aside[0]); !bytes.Equal(kept, data) {
		t.Fatal("the damaged file kept aside is not the damaged file")
	}
	ctx := context.Background()
	for id, states := range c.states {
		for ns, want := range states {
			got, err := db.Load(ctx, id, ns)
			switch {
			case id != victim && (err != nil || !reflect.DeepEqual(got, want)):
				t.Errorf("session %s/%s, none of whose pages was damaged: %v", id, ns, err)
			case id == victim && ns == "":
				if err != nil || len(got.Lists["messages"]) == 0 || len(got.Lists["messages"]) >= len(want.Lists["messages"]) {
					t.Errorf("the damaged session: %v, %d of %d messages", err, len(got.Lists["messages"]), len(want.Lists["messages"]))
				}
			}
		}
	}
	salvaged, err := db.Load(ctx, victim, "")
	if err != nil {
		t.Fatal(err)
	}
	// The next step of what was kept (a step that does not follow it is refused: GapError).
	if err := db.Put(ctx, Checkpoint{Thread: victim, Step: salvaged.Step + 1, Status: StatusDone, Lists: map[string][]Op{"messages": {{Kind: OpAppend, ID: "new", Body: json.RawMessage(`"new"`)}}}}); err != nil {
		t.Fatal(err)
	}
	if st, err := db.Load(ctx, victim, ""); err != nil || st.Lists["messages"][len(st.Lists["messages"])-1].ID != "new" {
		t.Fatalf("the salvaged session goes on: %v", err)
	}
	// Opened again, the salvaged file is whole.
	db.Close()
	db, err = Open(path)
	if err != nil || db.Recovered() != "" {
		t.Fatalf("reopened: %v %q", err, db.Recovered())
	}
	db.Close()
}

// A read-only open of a damaged store reads what can be salvaged, says the
// store is damaged (Damage), and leaves the file where and as it is.
func TestReadOnlyLeavesDamagedFile(t *testing.T) {
	c := genCorpusStore(t, 8)
	path := filepath.Join(t.TempDir(), "sessions.db")
	os.WriteFile(path, c.data, 0o600)
	data := bytes.Clone(c.data[:usedSize(t, path)*2/3]) // cut short
	os.WriteFile(path, data, 0o600)
	var warned []string
	db, err := OpenReadOnly(path, WithWarn(func(m string) { warned = append(warned, m) }))
	if err != nil {
		t.Fatal(err)
	}
	if db.Damage() == 0 || len(warned) != 1 || !strings.Contains(warned[0], "cut short") || !strings.Contains(warned[0], "left as it is") {
		t.Fatalf("damage %d, warned %q", db.Damage(), warned)
	}
	if _, err := db.Sessions(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if err := db.PutSession(context.Background(), Session{ID: "x"}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a write to a read-only store: %v", err)
	}
	rep, err := db.Check(context.Background())
	if err != nil || len(rep.Damaged) == 0 || !strings.Contains(strings.Join(rep.Damaged, "\n"), "cut short") {
		t.Fatalf("check: %+v %v", rep, err)
	}
	db.Close()
	if left, _ := os.ReadFile(path); !bytes.Equal(left, data) {
		t.Fatal("the file changed")
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*")); len(m) != 1 {
		t.Fatalf("files beside the store: %v", m)
	}
}

// Check lists every damaged record by session and kind, and nothing on an
// intact store; Load leaves the damaged records out and names them once.
func TestCheckListsDamagedRecords(t *testing.T) {
	c := genCorpusStore(t, 9)
	path := filepath.Join(t.TempDir(), "sessions.db")
	os.WriteFile(path, c.data, 0o600)
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := db.Check(ctx)
	if err != nil || len(rep.Damaged) != 0 || rep.Sessions != len(c.sessions) || rep.Records == 0 {
		t.Fatalf("an intact store: %+v %v", rep, err)
	}
	db.Close()
	// Flip a bit inside two records of one session: a message and the
	// session's record.
	var victim string
	for id := range c.sessions {
		if victim == "" || id < victim {
			victim = id
		}
	}
	raw, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw.Update(func(tx *bolt.Tx) error {
		n := tx.Bucket(layout.ThreadBucket(victim, ""))
		k, v := n.Cursor().Seek(layout.ItemPrefix("messages"))
		k, v = bytes.Clone(k), bytes.Clone(v)
		v[len(v)-3] ^= 0x10
		n.Put(k, v)
		h := bytes.Clone(n.Get(layout.KeyHead))
		h[len(h)-2] ^= 0x01
		return n.Put(layout.KeyHead, h)
	})
	raw.Close()
	var warned []string
	db, err = Open(path, WithWarn(func(m string) { warned = append(warned, m) }))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep, err = db.Check(ctx)
	all := strings.Join(rep.Damaged, "\n")
	if err != nil || len(rep.Damaged) != 2 || !strings.Contains(all, "of list messages") || !strings.Contains(all, "the session's record") || !strings.Contains(all, fmt.Sprintf("%q", victim)) {
		t.Fatalf("check: %q %v", rep.Damaged, err)
	}
	st, err := db.Load(ctx, victim, "")
	want := c.states[victim][""].Lists["messages"]
	if err != nil || len(st.Lists["messages"]) != len(want)-1 || !reflect.DeepEqual(st.Lists["messages"], want[1:]) {
		t.Fatalf("load: %v", err)
	}
	db.Load(ctx, victim, "")
	if _, err := db.Session(ctx, victim); !errors.Is(err, ErrDamaged) {
		t.Fatalf("session: %v", err)
	}
	if list, _ := db.Sessions(ctx, ""); len(list) != len(c.sessions)-1 {
		t.Fatalf("listed %d", len(list))
	}
	if db.Damage() != 4 || len(warned) != 2 {
		t.Fatalf("damage %d, warned %q", db.Damage(), warned)
	}
}

// A bit flipped in the name of a session's bucket (in the index of
// buckets, whatever it does to their order) is found at open, because the
// seals of the bucket's records cover its name, and the salvage puts the
// name right: the session reads as it was, and the report names it.
func TestDamagedBucketName(t *testing.T) {
	c := genCorpusStore(t, 11)
	for _, bit := range []int{0, 3, 7} {
		var victim string
		for id := range c.sessions {
			if victim == "" || id > victim {
				victim = id
			}
		}
		name := layout.ThreadBucket(victim, "")
		data := bytes.Clone(c.data)
		if bytes.Count(data, name) == 0 {
			t.Fatal("the bucket's name is not in the file")
		}
		for off := 0; ; { // every copy: the live one and stale ones alike
			i := bytes.Index(data[off:], name)
			if i < 0 {
				break
			}
			data[off+i+len(name)-1] ^= 1 << bit // the session ID's last character
			off += i + len(name)
		}
		path := filepath.Join(memDir(t), "sessions.db")
		os.WriteFile(path, data, 0o600)
		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(db.Recovered(), "one bit") {
			t.Errorf("bit %d: report %q", bit, db.Recovered())
		}
		st, err := db.Load(context.Background(), victim, "")
		if err != nil || !reflect.DeepEqual(st, c.states[victim][""]) {
			t.Errorf("bit %d: the session reads differently: %v", bit, err)
		}
		if s, err := db.Session(context.Background(), victim); err != nil || !reflect.DeepEqual(s, c.sessions[victim]) {
			t.Errorf("bit %d: its record: %v", bit, err)
		}
		db.Close()
	}
}
