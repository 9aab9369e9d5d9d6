package boltfile

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// buildFile writes, with the pinned bbolt, a file that has every kind of
// page and bucket: nested buckets, inline ones, a bucket whose keys span
// branch pages, values larger than a page (overflow), sequences, and free
// pages left by deletes and rewrites.
func buildFile(t testing.TB) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mirror.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		top, err := tx.CreateBucket([]byte("top"))
		if err != nil {
			return err
		}
		top.SetSequence(77)
		small, _ := top.CreateBucket([]byte("small")) // inline
		small.Put([]byte("k"), []byte("v"))
		small.SetSequence(0x0102030405060708)
		deep, _ := small.CreateBucket([]byte("deeper"))
		deep.Put([]byte("x"), nil)
		big, _ := top.CreateBucket([]byte("big"))
		for i := 0; i < 3000; i++ {
			big.Put([]byte(fmt.Sprintf("key-%05d", i)), bytes.Repeat([]byte{byte(i)}, 30+i%50))
		}
		huge, _ := tx.CreateBucket([]byte("huge"))
		huge.Put([]byte("a"), bytes.Repeat([]byte("overflow "), 2000)) // 18 KB: overflow pages
		huge.Put([]byte("b"), []byte("after"))
		for i := 0; i < 50; i++ {
			b, _ := tx.CreateBucket([]byte(fmt.Sprintf("\x01many-%02d", i)))
			b.Put([]byte("head"), []byte(fmt.Sprint(i)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Later commits free pages: a rewrite of the big bucket's middle, deletes.
	for round := 0; round < 3; round++ {
		err = db.Update(func(tx *bolt.Tx) error {
			big := tx.Bucket([]byte("top")).Bucket([]byte("big"))
			for i := 1000 + round*100; i < 1100+round*100; i++ {
				big.Delete([]byte(fmt.Sprintf("key-%05d", i)))
			}
			return tx.DeleteBucket([]byte(fmt.Sprintf("\x01many-%02d", round)))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// entry is one element of a bucket, with a nested bucket's own.
type entry struct {
	key, value string
	seq        uint64
	sub        []entry
}

func boltEntries(b *bolt.Bucket) []entry {
	var out []entry
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		e := entry{key: string(k), value: string(v)}
		if v == nil {
			if sub := b.Bucket(k); sub != nil {
				e.seq, e.sub = sub.Sequence(), boltEntries(sub)
			}
		}
		out = append(out, e)
	}
	return out
}

func fileEntries(t *testing.T, f *File, b Bucket) []entry {
	var out []entry
	err := f.Walk(b, "test", func(k, v []byte, bucket bool) error {
		e := entry{key: string(k), value: string(v)}
		if bucket {
			sub, err := ParseBucket(v)
			if err != nil {
				return err
			}
			e.value, e.seq, e.sub = "", sub.Seq, fileEntries(t, f, sub)
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The mirror reads a file the pinned bbolt wrote as bbolt reads it: the
// same buckets, keys, values and sequences, the same meta record, the same
// kind, count and overflow of every page it reaches, and the same free
// pages; every page is reached or free, and nothing is reported. A bbolt
// upgrade that changes its layout fails here.
func TestMirror(t *testing.T) {
	path, data := buildFile(t)
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if problems := Check(f); len(problems) != 0 {
		t.Fatalf("problems in an undamaged file: %v", problems)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		m := f.Meta()
		if m.Txid != uint64(tx.ID()) || int64(m.Pgid)*int64(m.PageSize) != tx.Size() || int(m.PageSize) != db.Info().PageSize {
			t.Errorf("meta %+v; bbolt: txid %d, size %d, page size %d", m, tx.ID(), tx.Size(), db.Info().PageSize)
		}
		if m.RootSeq != tx.Cursor().Bucket().Sequence() {
			t.Errorf("root sequence %d, bbolt %d", m.RootSeq, tx.Cursor().Bucket().Sequence())
		}
		want := boltEntries(tx.Cursor().Bucket())
		got := fileEntries(t, f, f.Root())
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("the buckets read differently:\n got %.300v\nwant %.300v", got, want)
		}
		kinds := map[uint16]string{BranchPage: "branch", LeafPage: "leaf", MetaPage: "meta", FreelistPage: "freelist"}
		free, heads := 0, 0
		for id := uint64(0); id < m.Pgid; id++ {
			info, err := tx.Page(int(id))
			if err != nil || info == nil {
				t.Fatalf("bbolt's page %d: %v", id, err)
			}
			if (info.Type == "free") != (f.free[id]) {
				t.Errorf("page %d: bbolt says %s, the mirror's freelist %v", id, info.Type, f.free[id])
			}
			if !f.reached[id] && !f.free[id] {
				t.Errorf("page %d (%s) is neither reached nor free", id, info.Type)
			}
			if info.Type == "free" {
				free++
				continue
			}
			h := parseHeader(data[id*uint64(m.PageSize):])
			if h.id != id {
				continue // an overflow page of the one before
			}
			heads++
			if kinds[h.flags] != info.Type || int(h.count) != info.Count || int(h.overflow) != info.OverflowCount {
				t.Errorf("page %d: %s %d elements %d overflow; bbolt: %s %d %d", id, kinds[h.flags], h.count, h.overflow, info.Type, info.Count, info.OverflowCount)
			}
		}
		if free == 0 || heads < 20 {
			t.Errorf("the file has %d free pages and %d page heads: it does not exercise the mirror", free, heads)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pageOf finds the first page of kind flags after the meta pages.
func pageOf(t *testing.T, data []byte, flags uint16, skip int) int {
	t.Helper()
	for off := 2 * 4096; off+4096 <= len(data); off += 4096 {
		h := parseHeader(data[off:])
		if h.id == uint64(off/4096) && h.flags == flags {
			if skip == 0 {
				return off
			}
			skip--
		}
	}
	t.Fatalf("no page of kind %#x", flags)
	return 0
}

// Damage of each kind is reported, and nothing loops, panics or reads past
// the file.
func TestDamageReported(t *testing.T) {
	_, good := buildFile(t)
	cases := []struct {
		name, want string
		damage     func(t *testing.T, d []byte) []byte
	}{
		{"cut short", "cut short", func(t *testing.T, d []byte) []byte { return d[:len(d)/2] }},
		{"a branch pointing at itself", "cycle", func(t *testing.T, d []byte) []byte {
			off := pageOf(t, d, BranchPage, 0)
			le.PutUint64(d[off+PageHeader+8:], uint64(off/4096))
			return d
		}},
		{"a branch pointing past the file", "out of the file", func(t *testing.T, d []byte) []byte {
			off := pageOf(t, d, BranchPage, 0)
			le.PutUint64(d[off+PageHeader+8:], 1<<40)
			return d
		}},
		{"a leaf losing its last elements", "not right after", func(t *testing.T, d []byte) []byte {
			off := pageOf(t, d, LeafPage, 3)
			le.PutUint16(d[off+10:], le.Uint16(d[off+10:])-2)
			return d
		}},
		{"a page calling itself another", "calls itself", func(t *testing.T, d []byte) []byte {
			off := pageOf(t, d, LeafPage, 2)
			le.PutUint64(d[off:], 3)
			return d
		}},
		{"a branch pointing at a free page", "free page", func(t *testing.T, d []byte) []byte {
			f, _ := Open(bytes.NewReader(d), int64(len(d)))
			var freePage uint64
			for id, free := range f.free {
				if free {
					freePage = uint64(id)
					break
				}
			}
			off := pageOf(t, d, BranchPage, 0)
			le.PutUint64(d[off+PageHeader+8:], freePage)
			return d
		}},
		{"a key out of order", "is out of", func(t *testing.T, d []byte) []byte {
			i := bytes.Index(d, []byte("key-00500"))
			copy(d[i:], "key-00000")
			return d
		}},
		{"meta pages zeroed", "no valid meta", func(t *testing.T, d []byte) []byte {
			clear(d[:2*4096])
			return d
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.damage(t, bytes.Clone(good))
			f, err := Open(bytes.NewReader(d), int64(len(d)))
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("open: %v", err)
				}
				return
			}
			problems := Check(f)
			if !strings.Contains(fmt.Sprint(problems), tc.want) {
				t.Fatalf("problems %v, want one saying %q", problems, tc.want)
			}
		})
	}
}

// Random damage anywhere never makes a check panic, loop or read past the
// file; what bbolt would open as it is (no meta damage) is either reported
// or reads the same buckets.
func TestRandomDamageTerminates(t *testing.T) {
	_, good := buildFile(t)
	r := rand.New(rand.NewSource(1))
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		d := bytes.Clone(good)
		for n := 1 + r.Intn(8); n > 0; n-- {
			at := r.Intn(len(d))
			d[at] ^= 1 << r.Intn(8)
		}
		if i%10 == 0 {
			d = d[:r.Intn(len(d))]
		}
		f, err := Open(bytes.NewReader(d), int64(len(d)))
		if err != nil {
			continue
		}
		Check(f)
	}
}
