package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
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
	out := map[string][]byte{}
	db.View(func(tx *bolt.Tx) error {
		items := tx.Bucket(bThreads).Bucket([]byte(thread)).Bucket(nsKey("")).Bucket(bLists).Bucket([]byte("messages")).Bucket(bItems)
		return items.ForEach(func(_, v []byte) error {
			it, _ := decodeItemRaw(v)
			out[it.ID] = bytes.Clone(it.Body)
			return nil
		})
	})
	return out
}

// decodeItemRaw splits a stored item without decompressing its body.
func decodeItemRaw(v []byte) (Item, error) {
	n, k := binary.Uvarint(v)
	return Item{ID: string(v[k : k+int(n)]), Body: v[k+int(n):]}, nil
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
	if raw["long"][0] != s2Tag || len(raw["long"]) > len(long)/4 {
		t.Errorf("the long message is stored as %d bytes, %.8x...", len(raw["long"]), raw["long"])
	}
	if !bytes.HasPrefix(raw["output"], zstdMagic) || len(raw["output"]) > len(output)/10 {
		t.Errorf("the tool output is stored as %d bytes, %.8x...", len(raw["output"]), raw["output"])
	}
	if !bytes.Equal(raw["short"], short) {
		t.Errorf("a short record was not kept raw: %q", raw["short"])
	}
	if len(raw["random"]) > len(random) {
		t.Errorf("a record grew when stored: %d bytes for %d", len(raw["random"]), len(random))
	}
	if got := records().pack(noise); !bytes.Equal(got, noise) {
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
	raw.Update(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Put(kFormat, u64(Format+1)) })
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
// 4 GiB) fails the load with a clear error; nothing panics or allocates it.
func TestDamagedCompressedRecord(t *testing.T) {
	for name, damaged := range map[string][]byte{
		"zstd": append(bytes.Clone(zstdMagic), 0xff, 0x00, 0x13, 0x37),
		"s2":   {s2Tag, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			db, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := db.Put(ctx, Checkpoint{Thread: "t", Step: 1, Status: StatusDone, Values: map[string]json.RawMessage{"v": json.RawMessage(`"x"`)}}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			raw, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			raw.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bThreads).Bucket([]byte("t")).Bucket(nsKey("")).Bucket(bValues).Put([]byte("v"), damaged)
			})
			raw.Close()
			db, err = Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Load(ctx, "t", ""); err == nil || !strings.Contains(err.Error(), "corrupt compressed record") {
				t.Fatalf("loading a damaged record: %v", err)
			}
		})
	}
}
