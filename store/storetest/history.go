package storetest

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/store"
)

// testHistory: a session's rewind history (store.History) kept alongside
// its checkpoints: entries by number, replaced in place and dropped into a
// branch; file contents by hash, read back as written, missing ones named
// pruned; all of it deleted with the session, and the session's own
// checkpoint untouched by it.
func testHistory(t *testing.T, s store.Store) {
	ctx := context.Background()
	h := store.NewHistory(s)
	const id = "s-history"
	now := time.Now()
	put(t, ctx, s, store.Checkpoint{Thread: id, Step: 0, Status: store.StatusDone,
		Lists: map[string][]store.Op{"messages": {{Kind: store.OpAppend, ID: "m1", Body: raw(`"hi"`)}}},
		Index: &store.Session{ID: id, Project: "p", Title: "t", Status: store.StatusDone, Created: now, Updated: now}})
	if got, err := h.Entries(ctx, "s-none"); err != nil || len(got) != 0 {
		t.Fatalf("entries of a session without history: %v %v", got, err)
	}
	for n := 1; n <= 3; n++ {
		if err := h.PutEntry(ctx, id, n, raw(`{"n":`+string(rune('0'+n))+`}`), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.PutEntry(ctx, id, 2, raw(`{"n":2,"files":1}`), store.Sync); err != nil {
		t.Fatal(err)
	}
	entries, err := h.Entries(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(store.Numbers(entries), []int{1, 2, 3}) || string(entries[2]) != `{"n":2,"files":1}` {
		t.Fatalf("entries: %v", entries)
	}
	testHistoryBlobs(t, ctx, h, id)
	if err := h.DropEntries(ctx, id, 2, "b1", raw(`{"from":2}`), ""); err != nil {
		t.Fatal(err)
	}
	entries, _ = h.Entries(ctx, id)
	branches, err := h.Branches(ctx, id)
	if err != nil || !reflect.DeepEqual(store.Numbers(entries), []int{1}) || string(branches["b1"]) != `{"from":2}` {
		t.Fatalf("after dropping from 2: entries %v, branches %v (%v)", entries, branches, err)
	}
	if err := h.PutEntry(ctx, id, 2, raw(`{"n":"2b"}`), ""); err != nil {
		t.Fatal(err)
	}
	entries, _ = h.Entries(ctx, id)
	if !reflect.DeepEqual(store.Numbers(entries), []int{1, 2}) || !strings.Contains(string(entries[2]), "2b") {
		t.Fatalf("a new entry 2 after the drop: %v", entries)
	}
	if st := load(t, ctx, s, id, ""); len(st.Lists["messages"]) != 1 {
		t.Fatalf("the session's own checkpoint changed: %+v", st.Lists)
	}
	if sess, err := s.Sessions(ctx, ""); err != nil || len(sess) != 1 {
		t.Fatalf("sessions listed with a history: %v %v", sess, err)
	}
	if ok, err := s.DeleteSession(ctx, id); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if entries, err := h.Entries(ctx, id); err != nil || len(entries) != 0 {
		t.Fatalf("history after the session's deletion: %v %v", entries, err)
	}
	if blobs, err := h.LoadBlobs(ctx, id); err != nil || blobs.Has("h2") {
		t.Fatalf("blobs after the session's deletion: %v", err)
	}
}

// testHistoryBlobs: contents read back as written (binary, empty, large and
// compressed), the same content stored twice is one, a deleted one is
// pruned.
func testHistoryBlobs(t *testing.T, ctx context.Context, h *store.History, id string) {
	big := bytes.Repeat([]byte("package main\n\nfunc main() {}\n"), 2000)
	for _, b := range []struct{ hash, text string }{{"h1", string(big)}, {"h2", "\x00\xffbinary"}, {"h3", ""}} {
		if err := h.PutBlob(ctx, id, b.hash, []byte(b.text), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.PutBlob(ctx, id, "h1", big, ""); err != nil { // the same content again
		t.Fatal(err)
	}
	blobs, err := h.LoadBlobs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for hash, want := range map[string]string{"h1": string(big), "h2": "\x00\xffbinary", "h3": ""} {
		got, err := blobs.Get(hash)
		if err != nil || string(got) != want {
			t.Fatalf("blob %s: %d bytes, %v", hash, len(got), err)
		}
	}
	if blobs.Size("h1") >= len(big)/4 {
		t.Errorf("blob h1 is stored in %d bytes for %d: not compressed", blobs.Size("h1"), len(big))
	}
	if err := h.DeleteBlobs(ctx, id, []string{"h1"}, ""); err != nil {
		t.Fatal(err)
	}
	blobs, _ = h.LoadBlobs(ctx, id)
	if _, err := blobs.Get("h1"); !errors.Is(err, store.ErrPruned) {
		t.Fatalf("a deleted blob: %v, want ErrPruned", err)
	}
}
