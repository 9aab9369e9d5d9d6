package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/layout"
	"github.com/agent-lsp/agent-lsp/store/internal/record"
)

// copyFile copies the fixture at src into a temporary directory.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// A file written before records were compressed (format 1, by the previous
// binary: testdata/store/format1.db) opens and reads as it was written, and
// takes new, compressed records next to its raw ones.
func TestFormat1FileLoads(t *testing.T) {
	path := copyFile(t, filepath.Join("..", "testdata", "store", "format1.db"))
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	s, err := db.Load(ctx, "s-format1", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Step != 4 || s.Status != StatusDone || string(s.Values["project"]) != `"sample"` || !strings.Contains(string(s.Values["summary"]), "summary summary") {
		t.Fatalf("values: %+v", s)
	}
	msgs := s.Lists["messages"]
	if len(msgs) != 4 || msgs[0].ID != "m1" || !strings.Contains(string(msgs[2].Body), `return \"Hello, \" + name`) {
		t.Fatalf("messages: %+v", msgs)
	}
	if !strings.Contains(string(s.Pending["task-1"]), "pending pending") {
		t.Fatalf("pending: %+v", s.Pending)
	}
	if list, err := db.Sessions(ctx, ""); err != nil || len(list) != 1 || list[0].ID != "s-format1" {
		t.Fatalf("sessions: %+v %v", list, err)
	}
	// Converted, its raw records were compressed: a 2.5 KB message of
	// source is stored as an S2 block.
	if raw := rawRecordsOf(db.db, "s-format1"); len(raw["m3"]) == 0 || raw["m3"][0] != record.S2Tag || len(raw["m3"]) > 2000 {
		t.Errorf("message m3 is stored as %d bytes, %.8x...", len(raw["m3"]), raw["m3"])
	}
	big := json.RawMessage(`{"id":"m5","role":"ai","content":"` + strings.Repeat("compressible text ", 100) + `"}`)
	if err := db.Put(ctx, Checkpoint{Thread: "s-format1", Step: 5, Status: StatusDone, Lists: map[string][]Op{"messages": {{Kind: OpUpsert, ID: "m5", Body: big}}}}); err != nil {
		t.Fatal(err)
	}
	s, err = db.Load(ctx, "s-format1", "")
	if err != nil || len(s.Lists["messages"]) != 5 || !bytes.Equal(s.Lists["messages"][4].Body, big) || !strings.Contains(string(s.Lists["messages"][2].Body), "Hello") {
		t.Fatalf("after a new record: %+v %v", s, err)
	}
}

// rawRecords returns the stored bytes of the list items of thread's
// messages, by item ID.
func rawRecords(t *testing.T, path, thread string) map[string][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return rawRecordsOf(db, thread)
}

// rawRecordsOf is rawRecords of an open file.
func rawRecordsOf(db *bolt.DB, thread string) map[string][]byte {
	out := map[string][]byte{}
	db.View(func(tx *bolt.Tx) error {
		prefix := layout.ItemPrefix("messages")
		c := tx.Bucket(layout.ThreadBucket(thread, "")).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			id, body, _ := layout.SplitItem(v[record.SealSize:])
			out[string(id)] = bytes.Clone(body)
		}
		return nil
	})
	return out
}

// Records are compressed when that pays: a message as an S2 block, a long
// tool output as a zstd frame, both reading back the same; a short record
// and an incompressible one stay raw.
func TestRecordsCompressedWhenItPays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 3000)
	rand.Read(noise)
	long := json.RawMessage(`{"content":"` + strings.Repeat("the agent reads greet.go again; ", 60) + `"}`)
	output := json.RawMessage(`{"content":"` + strings.Repeat("ok  \tgithub.com/agent-lsp/agent-lsp/store\t0.5s\n", 600) + `"}`)
	short := json.RawMessage(`{"content":"ok"}`)
	random, _ := json.Marshal(map[string]string{"content": string(noise)})
	ops := []Op{{Kind: OpUpsert, ID: "long", Body: long}, {Kind: OpUpsert, ID: "short", Body: short}, {Kind: OpUpsert, ID: "random", Body: random}, {Kind: OpUpsert, ID: "output", Body: output}}
	ctx := context.Background()
	if err := db.Put(ctx, Checkpoint{Thread: "t", Step: 1, Status: StatusDone, Lists: map[string][]Op{"messages": ops}}); err != nil {
		t.Fatal(err)
	}
	s, err := db.Load(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []json.RawMessage{long, short, random, output} {
		if !bytes.Equal(s.Lists["messages"][i].Body, want) {
			t.Fatalf("item %d reads back as %.80q", i, s.Lists["messages"][i].Body)
		}
	}
	db.Close()
	raw := rawRecords(t, path, "t")
	if raw["long"][0] != record.S2Tag || len(raw["long"]) > len(long)/4 {
		t.Errorf("the long message is stored as %d bytes, %.8x...", len(raw["long"]), raw["long"])
	}
	if !bytes.HasPrefix(raw["output"], record.ZstdMagic) || len(raw["output"]) > len(output)/10 {
		t.Errorf("the tool output is stored as %d bytes, %.8x...", len(raw["output"]), raw["output"])
	}
	if !bytes.Equal(raw["short"], short) {
		t.Errorf("a short record was not kept raw: %q", raw["short"])
	}
	if len(raw["random"]) > len(random) {
		t.Errorf("a record grew when stored: %d bytes for %d", len(raw["random"]), len(random))
	}
	if got := record.Compress(noise); !bytes.Equal(got, noise) {
		t.Errorf("incompressible bytes were not kept raw (%d bytes for %d)", len(got), len(noise))
	}
}

// A store written by a newer agent-lsp is refused, asking for an upgrade,
// and left as it is (not moved aside as damaged).
func TestNewerFormatRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw.Update(func(tx *bolt.Tx) error {
		rec, sum := layout.FormatRecords(Format + 1)
		tx.Bucket(layout.Meta).Put(layout.FormatSumKey, sum)
		return tx.Bucket(layout.Meta).Put(layout.FormatKey, rec)
	})
	raw.Close()
	_, err = Open(path)
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "upgrade agent-lsp") {
		t.Fatalf("opening a newer store: %v", err)
	}
	if matches, _ := filepath.Glob(path + ".corrupt-*"); len(matches) > 0 {
		t.Fatalf("the newer store was moved aside: %v", matches)
	}
}

// A damaged compressed record (a bad zstd frame, an S2 block that claims
// 4 GiB), whose seal holds (a writer's bug, not the disk's), is left out of
// the load and named; nothing panics or allocates it. Without its seal it is
// left out the same.
func TestDamagedCompressedRecord(t *testing.T) {
	for name, damaged := range map[string][]byte{
		"zstd": append(bytes.Clone(record.ZstdMagic), 0xff, 0x00, 0x13, 0x37),
		"s2":   {record.S2Tag, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00},
	} {
		for _, sealed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/sealed=%v", name, sealed), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "s.db")
				db, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if err := db.Put(ctx, Checkpoint{Thread: "t", Step: 1, Status: StatusDone, Values: map[string]json.RawMessage{"v": json.RawMessage(`"x"`), "w": json.RawMessage(`"y"`)}}); err != nil {
					t.Fatal(err)
				}
				db.Close()
				raw, err := bolt.Open(path, 0o600, nil)
				if err != nil {
					t.Fatal(err)
				}
				raw.Update(func(tx *bolt.Tx) error {
					name, v := layout.ThreadBucket("t", ""), damaged
					if sealed {
						v = record.Seal(record.Place{Bucket: name, Key: layout.ValueKey("v")}, damaged)
					}
					return tx.Bucket(name).Put(layout.ValueKey("v"), v)
				})
				raw.Close()
				var warned []string
				db, err = Open(path, WithWarn(func(m string) { warned = append(warned, m) }))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				st, err := db.Load(ctx, "t", "")
				if err != nil || st.Values["v"] != nil || string(st.Values["w"]) != `"y"` {
					t.Fatalf("loading a damaged record: %+v %v", st, err)
				}
				want := "corrupt compressed record"
				if !sealed {
					want = "no checksum"
				}
				if db.Damage() != 1 || len(warned) != 1 || !strings.Contains(warned[0], want) || !strings.Contains(warned[0], `value "v"`) {
					t.Fatalf("damage %d, warned %q", db.Damage(), warned)
				}
			})
		}
	}
}

// checkFormat2 checks that db holds the sessions of the fixture
// testdata/store/format2.db (written by the binary of format 2) as they
// were written, and that they go on: new items follow the old ones, an
// old item is replaced in place.
func checkFormat2(t *testing.T, db *Bolt) {
	t.Helper()
	ctx := context.Background()
	s, err := db.Load(ctx, "s-format2", "")
	if err != nil {
		t.Fatal(err)
	}
	ids := func(items []Item) (out []string) {
		for _, it := range items {
			out = append(out, it.ID)
		}
		return out
	}
	if s.Step != 3 || s.Status != StatusRunning || len(s.Next) != 1 || s.Next[0].ID != "task-2" {
		t.Fatalf("head: step %d %s next %+v", s.Step, s.Status, s.Next)
	}
	if got := ids(s.Lists["messages"]); strings.Join(got, ",") != "m1,m3,m4" {
		t.Fatalf("messages %v", got)
	}
	if !strings.Contains(string(s.Lists["messages"][0].Body), "hello again") || !strings.Contains(string(s.Lists["messages"][1].Body), "agent-lsp/store\\t0.5s") {
		t.Fatalf("message bodies: %.200s", s.Lists["messages"])
	}
	if notes := s.Lists["notes"]; len(notes) != 3 || string(notes[2].Body) != `"note 2"` {
		t.Fatalf("notes %+v", notes)
	}
	if string(s.Values["project"]) != `"sample"` || !strings.HasSuffix(string(s.Values["summary"]), ` 2"`) {
		t.Fatalf("values %q", s.Values)
	}
	if !strings.Contains(string(s.Pending["task-2"]), "pending pending") {
		t.Fatalf("pending %q", s.Pending)
	}
	sub, err := db.Load(ctx, "s-format2", "sub:1")
	if err != nil || sub.Status != StatusDone || strings.Join(ids(sub.Lists["messages"]), ",") != "x1,x2" {
		t.Fatalf("subagent: %+v %v", sub, err)
	}
	list, err := db.Sessions(ctx, "")
	if err != nil || len(list) != 2 || list[0].ID != "s-format2" || list[0].Title != "format two" || list[1].ID != "s-empty" {
		t.Fatalf("sessions: %+v %v", list, err)
	}
	if _, err := db.Load(ctx, "s-empty", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a session without runs loads: %v", err)
	}
	five := json.RawMessage(`{"id":"m5","role":"ai","content":"five"}`)
	four := json.RawMessage(`{"id":"m4","role":"ai","content":"four, replaced"}`)
	err = db.Put(ctx, Checkpoint{Thread: "s-format2", Step: 4, Status: StatusDone, Lists: map[string][]Op{
		"messages": {{Kind: OpAppend, ID: "m5", Body: five}, {Kind: OpUpsert, ID: "m4", Body: four}},
		"notes":    {{Kind: OpUpsert, Body: json.RawMessage(`"note 3"`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err = db.Load(ctx, "s-format2", "")
	if err != nil || strings.Join(ids(s.Lists["messages"]), ",") != "m1,m3,m4,m5" || !bytes.Equal(s.Lists["messages"][2].Body, four) || len(s.Lists["notes"]) != 4 || string(s.Lists["notes"][3].Body) != `"note 3"` {
		t.Fatalf("after a new step: %+v %v", s, err)
	}
	if len(s.Pending) != 0 {
		t.Fatalf("a new step kept the old step's pending writes: %q", s.Pending)
	}
}

// legacyBuckets reports whether the file at path still has buckets of the
// legacy layout, and its format record.
func legacyBuckets(t *testing.T, path string) (legacy bool, format uint64) {
	t.Helper()
	raw, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.View(func(tx *bolt.Tx) error {
		legacy = tx.Bucket(legacySessions) != nil || tx.Bucket(legacyThreads) != nil
		if m := tx.Bucket(layout.Meta); m != nil && len(m.Get(layout.FormatKey)) == 8 {
			format = binary.BigEndian.Uint64(m.Get(layout.FormatKey))
		}
		return nil
	})
	return legacy, format
}

// A file of format 2 (nested buckets per namespace and a session index of
// its own) is converted when it opens, and reads as it was written.
func TestFormat2FileConverts(t *testing.T) {
	path := copyFile(t, filepath.Join("..", "testdata", "store", "format2.db"))
	if legacy, format := legacyBuckets(t, path); !legacy || format != 2 {
		t.Fatalf("the fixture is not of format 2: legacy %v format %d", legacy, format)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The old layout's pages are free after the conversion: the file was
	// compacted.
	if _, file, err := db.Sizes(); err != nil || file >= fi.Size() {
		t.Errorf("after the conversion the file has %d bytes, %d before (%v)", file, fi.Size(), err)
	}
	checkFormat2(t, db)
	if s, err := db.Load(context.Background(), "t-unlisted", ""); err != nil || string(s.Values["v"]) != "1" {
		t.Fatalf("a thread without a session record: %+v %v", s, err)
	}
	if v, err := db.Approval(context.Background(), "mcp:sample"); err != nil || v != "yes" {
		t.Fatalf("approval %q %v", v, err)
	}
	db.Close()
	if legacy, format := legacyBuckets(t, path); legacy || format != Format {
		t.Fatalf("after the conversion: legacy buckets %v, format %d", legacy, format)
	}
}

// A file the binary of format 3 left half converted (it converted in
// record.Place, a session per transaction, and died after the first) is
// converted whole: every session is there once. The copy a conversion
// that died left beside the file is replaced.
func TestFormat2ConversionResumes(t *testing.T) {
	path := copyFile(t, filepath.Join("..", "testdata", "store", "format2.db"))
	raw, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(tx *bolt.Tx) error {
		// s-empty (an index record only) moved to format 3's layout.
		idx := tx.Bucket(legacySessions)
		rec := bytes.Clone(idx.Get([]byte("s-empty")))
		if rec == nil {
			return errors.New("no s-empty in the fixture")
		}
		n, err := tx.CreateBucket(layout.ThreadBucket("s-empty", ""))
		if err != nil {
			return err
		}
		if err := n.Put(layout.KeyHead, layout.EncodeHead(nil, rec)); err != nil {
			return err
		}
		if err := idx.Delete([]byte("s-empty")); err != nil {
			return err
		}
		return tx.Bucket(layout.Meta).Put(layout.FormatKey, layout.U64(3))
	})
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path+".converting", []byte("the rest of a copy"), 0o600)
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkFormat2(t, db)
	if _, err := os.Stat(path + ".converting"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the converting copy is left: %v", err)
	}
}

// A sibling store of format 2 left by an earlier version imports in the
// current layout.
func TestImportFormat2Sibling(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "store", "format2.db"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "sessions.1a2b3c4d.db"), data, 0o600)
	db, err := Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, notes := ImportSiblings(context.Background(), db)
	if n != 2 || len(notes) != 0 {
		t.Fatalf("imported %d, notes %q", n, notes)
	}
	checkFormat2(t, db)
}

// A damaged record of a format-2 file (an item key bbolt's layout cannot
// have) is left out of the conversion and reported; the store opens with
// every other session, and the next Open finds nothing left to convert.
func TestConversionLeavesOutWhatItCannotRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	raw, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(layout.Meta)
		meta.Put(layout.FormatKey, layout.U64(2))
		idx, _ := tx.CreateBucket(legacySessions)
		idx.Put([]byte("s-good"), []byte(`{"session":"s-good","title":"good"}`))
		idx.Put([]byte("s-bad"), []byte(`{"session":"s-bad","title":"bad"}`))
		th, _ := tx.CreateBucket(legacyThreads)
		b, _ := th.CreateBucket([]byte("s-bad"))
		ns, _ := b.CreateBucket([]byte("ns:"))
		ns.Put(legacyHead, []byte(`{"step":1,"status":"done"}`))
		lists, _ := ns.CreateBucket(legacyLists)
		l, _ := lists.CreateBucket([]byte("messages"))
		items, _ := l.CreateBucket(legacyItems)
		items.Put(layout.U64(1), layout.EncodeItem("m1", []byte(`"kept"`)))
		items.Put([]byte("short"), []byte{0}) // damaged
		return nil
	})
	raw.Close()
	var warned []string
	db, err := Open(path, WithWarn(func(m string) { warned = append(warned, m) }))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if len(warned) != 1 || !strings.Contains(warned[0], `session "s-bad"`) || !strings.Contains(warned[0], "damaged") {
		t.Fatalf("warned %q", warned)
	}
	list, err := db.Sessions(context.Background(), "")
	if err != nil || len(list) != 2 {
		t.Fatalf("sessions %+v %v", list, err)
	}
	s, err := db.Load(context.Background(), "s-bad", "")
	if err != nil || len(s.Lists["messages"]) != 1 || string(s.Lists["messages"][0].Body) != `"kept"` {
		t.Fatalf("the damaged session: %+v %v", s, err)
	}
}

// A file of format 3 (written by the previous binary:
// testdata/store/format3.db) is converted when it opens: it reads as it was
// written, every record is sealed afterwards (Check finds nothing, reading
// strictly), and a binary of format 3 would refuse it.
func TestFormat3FileConverts(t *testing.T) {
	path := copyFile(t, filepath.Join("..", "testdata", "store", "format3.db"))
	if legacy, format := legacyBuckets(t, path); legacy || format != 3 {
		t.Fatalf("the fixture is not of format 3: legacy %v format %d", legacy, format)
	}
	// Read-only, it is read as it is: not converted, not changed.
	before, _ := os.ReadFile(path)
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	checkFormat3(t, ro)
	if ro.Damage() != 0 || ro.release == nil {
		t.Fatalf("read-only view: damage %d, a converted copy %v", ro.Damage(), ro.release != nil)
	}
	ro.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("a read-only open changed the file")
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	checkFormat3(t, db)
	rep, err := db.Check(context.Background())
	if err != nil || len(rep.Damaged) != 0 || rep.Sessions != 2 || !db.strict {
		t.Fatalf("check after the conversion: %+v %v (strict %v)", rep, err, db.strict)
	}
	db.Close()
	if legacy, format := legacyBuckets(t, path); legacy || format != Format {
		t.Fatalf("after the conversion: legacy %v, format %d", legacy, format)
	}
	// Every record of the converted file is sealed.
	raw, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if bytes.Equal(name, layout.Meta) {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				if bytes.Equal(k, layout.KeyHead) {
					h, s, _ := layout.SplitHead(v)
					v = append(h[:1:1], s...)
				}
				if len(v) == 0 || v[0] != record.SealTag {
					t.Errorf("bucket %q key %q is not sealed", name, k)
				}
				return nil
			})
		})
	})
}

// checkFormat3 checks that db holds the sessions of testdata/store/format3.db.
func checkFormat3(t *testing.T, db *Bolt) {
	t.Helper()
	ctx := context.Background()
	s, err := db.Load(ctx, "s-format3", "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range s.Lists["messages"] {
		ids = append(ids, it.ID)
	}
	if s.Step != 1 || s.Status != StatusRunning || len(s.Next) != 2 || strings.Join(ids, ",") != "m1,m2,m3" ||
		!strings.Contains(string(s.Lists["messages"][2].Body), `return \"Hello, \" + name`) {
		t.Fatalf("state: step %d %s next %v messages %v", s.Step, s.Status, s.Next, ids)
	}
	if string(s.Values["project"]) != `"sample"` || !strings.Contains(string(s.Values["summary"]), "summary summary") {
		t.Fatalf("values %q", s.Values)
	}
	if len(s.Pending) != 2 || !strings.Contains(string(s.Pending["task-2"]), "pending pending") {
		t.Fatalf("pending %q", s.Pending)
	}
	// The input queued by a binary before 0.2 is in the graph's current
	// encoding: rewritten when the file was converted.
	input := string(s.Pending["input/00000001763632800000000000/q1"])
	if want := `[{"c":"messages","w":{"append":[{"id":"m5","role":"human","content":"and also"}]}}]`; input != want {
		t.Fatalf("the legacy input reads %s, want %s", input, want)
	}
	if sub, err := db.Load(ctx, "s-format3", "subagent-0a1b2c3d"); err != nil || sub.Status != StatusDone || len(sub.Lists["messages"]) != 2 {
		t.Fatalf("subagent: %+v %v", sub, err)
	}
	list, err := db.Sessions(ctx, "")
	if err != nil || len(list) != 2 || list[0].ID != "s-done" || list[1].Title != "format three" || list[1].Root != "/src/sample" {
		t.Fatalf("sessions %+v %v", list, err)
	}
	if v, err := db.Approval(ctx, "mcp:sample"); err != nil || v != "yes" {
		t.Fatalf("approval %q %v", v, err)
	}
}
