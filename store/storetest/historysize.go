package storetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/agent-lsp/agent-lsp/store"
)

// testHistoryUsage: a session's history size is counted from what the
// store holds, item by item (entries, branches, compressed blobs), the
// same on every backend; pruning the oldest checkpoint's blobs (the size
// cap) takes exactly their bytes off, and what is left reads back whole,
// the pruned ones named pruned.
func testHistoryUsage(t *testing.T, s store.Store) {
	ctx := context.Background()
	h := store.NewHistory(s)
	const id = "s-usage"
	if u, err := h.Usage(ctx, id); err != nil || u.Total() != 0 {
		t.Fatalf("usage of a session without history: %v %v", u, err)
	}
	entries := map[int]string{1: `{"n":1,"files":[{"before":"old"}]}`, 2: `{"n":2,"files":[{"before":"mid"}]}`}
	for n, body := range entries {
		if err := h.PutEntry(ctx, id, n, raw(body), ""); err != nil {
			t.Fatal(err)
		}
	}
	contents := map[string][]byte{"old": bytes.Repeat([]byte("old line\n"), 5000), "mid": []byte("middle\n"), "new": []byte("x")}
	for hash, b := range contents {
		if err := h.PutBlob(ctx, id, hash, b, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.PutBranch(ctx, id, "b1", []byte(`{"from":3}`), store.Sync); err != nil {
		t.Fatal(err)
	}
	blobs, err := h.LoadBlobs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(len(entries[1]) + len(entries[2]) + len(`{"from":3}`))
	for hash := range contents {
		want += int64(blobs.Size(hash))
	}
	u, err := h.Usage(ctx, id)
	if err != nil || u.Total() != want || u.Entries[1] != len(entries[1]) || u.Branches["b1"] != len(`{"from":3}`) || u.Blobs["old"] != blobs.Size("old") {
		t.Fatalf("usage %+v (total %d), want total %d: %v", u, u.Total(), want, err)
	}
	if u.Blobs["old"] >= len(contents["old"])/10 {
		t.Errorf("the blob of %d bytes counts %d: not its compressed size", len(contents["old"]), u.Blobs["old"])
	}
	// The cap prunes checkpoint 1: its blob, then its entry; a branch goes too.
	if err := h.DeleteBlobs(ctx, id, []string{"old"}, store.Sync); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteEntries(ctx, id, []int{1}, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteBranches(ctx, id, []string{"b1"}, ""); err != nil {
		t.Fatal(err)
	}
	after, err := h.Usage(ctx, id)
	if left := want - int64(u.Blobs["old"]+u.Entries[1]+u.Branches["b1"]); err != nil || after.Total() != left || len(after.Entries) != 1 || len(after.Branches) != 0 {
		t.Fatalf("usage after pruning: %+v (total %d), want %d: %v", after, after.Total(), left, err)
	}
	blobs, _ = h.LoadBlobs(ctx, id)
	if got, err := blobs.Get("mid"); err != nil || string(got) != "middle\n" || blobs.Has("old") {
		t.Fatalf("blobs after pruning: %q %v, old held: %v", got, err, blobs.Has("old"))
	}
	if got, _ := h.Entries(ctx, id); len(got) != 1 || string(got[2]) != entries[2] {
		t.Fatalf("entries after pruning: %v", got)
	}
}
