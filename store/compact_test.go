package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// compactBody is the body of message i of TestCompactGivesSpaceBack: about
// a kilobyte.
func compactBody(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"content":"message %d: %s"}`, i, strings.Repeat(fmt.Sprintf("%d lorem ipsum %d ", i, i*7), 40)))
}

// putCompactSessions stores 60 sessions s-000 … s-059 of 40 messages each
// (message i of session s has compactBody(s*100+i)); all but the first five
// were last updated two days ago.
func putCompactSessions(t *testing.T, db *Bolt) {
	t.Helper()
	old := time.Now().Add(-48 * time.Hour)
	for s := 0; s < 60; s++ {
		id := fmt.Sprintf("s-%03d", s)
		var ops []Op
		for i := 0; i < 40; i++ {
			ops = append(ops, Op{Kind: OpUpsert, ID: fmt.Sprintf("m%d", i), Body: compactBody(s*100 + i)})
		}
		updated := time.Now()
		if s >= 5 {
			updated = old
		}
		if err := db.Put(context.Background(), Checkpoint{Thread: id, Step: 1, Status: StatusDone, Lists: map[string][]Op{"messages": ops},
			Index: &Session{ID: id, Status: StatusDone, Updated: updated}}); err != nil {
			t.Fatal(err)
		}
	}
}

// Deleting most sessions leaves the file's size; Compact gives the space
// back, keeps every remaining record, and the store goes on: writes made
// while it runs land too.
func TestCompactGivesSpaceBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(path, WithDefaultDurability(Sync))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	body := compactBody
	putCompactSessions(t, db)
	db.now = func() time.Time { return time.Now() }
	if n, err := db.DeleteOlderThan(ctx, time.Now().Add(-time.Hour)); err != nil || n != 55 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	used, file, _ := db.Sizes()
	if used > file/2 {
		t.Fatalf("after the prune %d of %d bytes are in use: the test needs a mostly free file", used, file)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var writes []string
	wg.Add(1)
	go func() { // a session writing while the file is compacted
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("m-live-%d", i)
			if err := db.Put(ctx, Checkpoint{Thread: "s-live", Step: i, Status: StatusRunning, Lists: map[string][]Op{"messages": {{Kind: OpUpsert, ID: id, Body: body(i)}}}}); err != nil {
				t.Errorf("a write during the compaction: %v", err)
				return
			}
			writes = append(writes, id)
		}
	}()
	time.Sleep(10 * time.Millisecond)
	before, after, err := db.Compact(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if after >= before/2 {
		t.Fatalf("compacted from %d to %d bytes", before, after)
	}
	for s := 0; s < 5; s++ {
		st, err := db.Load(ctx, fmt.Sprintf("s-%03d", s), "")
		if err != nil || len(st.Lists["messages"]) != 40 || string(st.Lists["messages"][7].Body) != string(body(s*100+7)) {
			t.Fatalf("session %d after compaction: %v", s, err)
		}
	}
	st, err := db.Load(ctx, "s-live", "")
	if err != nil || len(st.Lists["messages"]) != len(writes) {
		t.Fatalf("the live session has %d of %d messages: %v", len(st.Lists["messages"]), len(writes), err)
	}
	if list, _ := db.Sessions(ctx, ""); len(list) != 5 {
		t.Fatalf("%d sessions after compaction", len(list))
	}
	if matches, _ := filepath.Glob(path + ".compacting"); len(matches) > 0 {
		t.Fatal("the compaction's copy was left behind")
	}
}
