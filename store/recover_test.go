package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/store/internal/layout"
)

// A store file cut short (a full disk, a copy interrupted) is salvaged:
// what its remaining pages hold is kept, each kept session exactly as it
// was, the report says how many, the damaged file is moved aside, and the
// store goes on; nothing panics and the lock is not kept.
func TestOpenDamagedStore(t *testing.T) {
	for _, frac := range []int64{2, 3, 10} {
		t.Run(fmt.Sprintf("1/%d", frac), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sessions.db")
			db, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]Session{}
			for i := 0; i < 300; i++ {
				s := Session{ID: fmt.Sprint("s", i), Title: strings.Repeat("t", 500), Updated: time.Now()}
				db.PutSession(context.Background(), s)
				want[s.ID], _ = db.Session(context.Background(), s.ID)
			}
			db.Close()
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:int64(usedSize(t, path))/frac], 0o600)

			db, err = Open(path)
			if err != nil {
				t.Fatalf("open a damaged store: %v", err)
			}
			defer db.Close()
			if !strings.Contains(db.Recovered(), "cut short") || !strings.Contains(db.Recovered(), "moved to "+path+".corrupt-") {
				t.Fatalf("recovered: %q", db.Recovered())
			}
			list, err := db.Sessions(context.Background(), "")
			if err != nil || !strings.Contains(db.Recovered(), fmt.Sprintf("%d session(s) kept whole", len(list))) {
				t.Fatalf("the salvaged store lists %d sessions, %v; report %q", len(list), err, db.Recovered())
			}
			for _, s := range list {
				if !reflect.DeepEqual(s, want[s.ID]) {
					t.Fatalf("a salvaged session differs: %+v", s)
				}
			}
			t.Logf("%d of 300 sessions kept", len(list))
			if err := db.PutSession(context.Background(), Session{ID: "new"}); err != nil {
				t.Fatal(err)
			}
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("the damaged file was not kept: %v", aside)
			}
		})
	}
}

// bbolt's open, initialization and compaction of a damaged file run under
// the fault guard: reached without the check Open makes first, a file cut
// short fails them with a CorruptError instead of faulting the process.
func TestFaultsAtOpenAreGuarded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(path, WithDefaultDurability(Sync))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		db.PutSession(context.Background(), Session{ID: fmt.Sprint("s", i), Title: strings.Repeat("t", 500)})
	}
	db.Close()
	full, _ := os.ReadFile(path)
	used := usedSize(t, path)
	var corrupt *CorruptError
	faulted := 0
	for cut := 2 * 4096; cut < used; cut += 4096 {
		// A new file each time: an open that panicked keeps its file
		// locked (see openBolt).
		path := filepath.Join(t.TempDir(), "cut.db")
		os.WriteFile(path, full[:cut], 0o600)
		raw, err := openBolt(path, false)
		if err == nil {
			err = initBuckets(raw, path)
			if err == nil {
				err = guarded(path, func() error {
					return raw.View(func(tx *bolt.Tx) error {
						return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return nil })
					})
				})
			}
			raw.Close()
		}
		if errors.As(err, &corrupt) {
			faulted++
		} else if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	if faulted == 0 {
		t.Fatal("no cut made bbolt fault: the test shows nothing")
	}
	// Compaction of a file cut short under the store.
	os.WriteFile(path, full, 0o600)
	db, err = Open(path, WithDefaultDurability(Sync))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	os.Truncate(path, 3*4096)
	if _, _, err := db.Compact(context.Background()); !errors.As(err, &corrupt) {
		t.Fatalf("compacting a file cut short: %v", err)
	}
}

// One record that cannot be decoded is left out of the list and reported;
// the others are listed.
func TestUndecodableSessionSkipped(t *testing.T) {
	var warned []string
	db, err := Open(filepath.Join(t.TempDir(), "s.db"), WithWarn(func(m string) { warned = append(warned, m) }))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	db.PutSession(ctx, Session{ID: "good-1"})
	db.PutSession(ctx, Session{ID: "good-2"})
	db.db.Update(func(tx *bolt.Tx) error {
		n, _ := tx.CreateBucket(layout.ThreadBucket("bad", ""))
		return n.Put(layout.KeyHead, layout.EncodeHead(nil, []byte("{not json")))
	})
	list, err := db.Sessions(ctx, "")
	if err != nil || len(list) != 2 {
		t.Fatalf("%d sessions, %v", len(list), err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `"bad"`) {
		t.Fatalf("warned %q", warned)
	}
}

// After a group commit failed, the next batched step fails instead of the
// run going on as if its steps were stored; once, and nothing after it.
// Reads in between (their Flush) neither take the failure from the step
// nor fail on it.
func TestBatchedFailsAfterAFailedGroup(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "s.db"), WithDefaultDurability(Batched))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	boom := errors.New("no space left on device")
	if err := db.submit(func(*bolt.Tx) error { return boom }, false); err != nil {
		t.Fatal(err)
	}
	for range 3 { // the failing group is committed by the first
		if err := db.Flush(); err != nil {
			t.Fatalf("Flush after the failed group: %v", err)
		}
	}
	if _, err := db.Sessions(ctx, ""); err != nil {
		t.Fatalf("a read after the failed group: %v", err)
	}
	if err := db.Put(ctx, Checkpoint{Thread: "t", Step: 1, Status: StatusRunning}); !errors.Is(err, boom) {
		t.Fatalf("the next batched step: %v", err)
	}
	if err := db.Put(ctx, Checkpoint{Thread: "t", Step: 2, Status: StatusRunning}); err != nil {
		t.Fatalf("the step after that: %v", err)
	}
}

// A store file cut at any point never faults the process (bbolt maps pages
// its meta page counts without checking the file holds them): it opens, or
// is moved aside as damaged.
func TestStoreCutAnywhere(t *testing.T) {
	src := filepath.Join(t.TempDir(), "full.db")
	db, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		db.PutSession(context.Background(), Session{ID: fmt.Sprint("s", i), Title: strings.Repeat("t", 500), Updated: time.Now()})
	}
	db.Close()
	full, _ := os.ReadFile(src)
	for cut := 0; cut < len(full); cut += len(full)/40 + 1 {
		path := filepath.Join(t.TempDir(), "sessions.db")
		os.WriteFile(path, full[:cut], 0o600)
		db, err := Open(path)
		if err != nil {
			t.Fatalf("cut at %d of %d: %v", cut, len(full), err)
		}
		if _, err := db.Sessions(context.Background(), ""); err != nil {
			t.Fatalf("cut at %d: list: %v", cut, err)
		}
		db.Close()
	}
}

// A store file cut short under a running process (another program
// truncated it, a bad block) fails the reads that reach the missing pages
// with a CorruptError; the process does not fault.
func TestFileCutShortWhileOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(path, WithDefaultDurability(Sync))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for i := 0; i < 300; i++ {
		noise := make([]byte, 1500) // incompressible: the file holds 600 KB
		rand.Read(noise)
		body, _ := json.Marshal(map[string]string{"content": fmt.Sprintf("message %d %x", i, noise)})
		if err := db.Put(ctx, Checkpoint{Thread: "t", Step: i, Status: StatusRunning, Lists: map[string][]Op{"messages": {{Kind: OpUpsert, ID: fmt.Sprintf("m%04d", i), Body: body}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(path, 64<<10); err != nil {
		t.Fatal(err)
	}
	_, err = db.Load(ctx, "t", "")
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) {
		t.Fatalf("loading from a file cut short: %v", err)
	}
}
