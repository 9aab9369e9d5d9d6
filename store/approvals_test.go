package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// Approvals are kept by key, survive reopening the file, and are deleted
// by an empty value; in memory and in bbolt alike.
func TestApprovals(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	open := map[string]func() Store{
		"memory": func() Store { return NewMemory() },
		"bolt": func() Store {
			db, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			return db
		},
	}
	for name, newStore := range open {
		t.Run(name, func(t *testing.T) {
			st := newStore()
			if v, err := st.Approval(ctx, "mcp\x00/repo\x00db"); err != nil || v != "" {
				t.Fatalf("before: %q %v", v, err)
			}
			if err := st.SetApproval(ctx, "mcp\x00/repo\x00db", "sha256:abc"); err != nil {
				t.Fatal(err)
			}
			if name == "bolt" {
				st.Close()
				st = newStore()
			}
			defer st.Close()
			if v, _ := st.Approval(ctx, "mcp\x00/repo\x00db"); v != "sha256:abc" {
				t.Fatalf("after: %q", v)
			}
			if _, err := st.(Sessions).DeleteOlderThan(ctx, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if v, _ := st.Approval(ctx, "mcp\x00/repo\x00db"); v != "sha256:abc" {
				t.Fatal("pruning sessions dropped an approval")
			}
			st.SetApproval(ctx, "mcp\x00/repo\x00db", "")
			if v, _ := st.Approval(ctx, "mcp\x00/repo\x00db"); v != "" {
				t.Fatalf("deleted: %q", v)
			}
		})
	}
}
