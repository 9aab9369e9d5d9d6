package store_test

import (
	"path/filepath"
	"testing"

	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/store/storetest"
)

// The conformance suite (store/storetest), on the in-memory store and on
// bbolt with sync and batched as its default durability (the suite reads in
// the middle of runs, which exit mode keeps in memory; its own test of exit
// mode chooses it per write); store/postgres runs it on PostgreSQL.
func TestConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
	})
	for _, d := range []store.Durability{store.Sync, store.Batched} {
		t.Run("bbolt/durability="+string(d), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				db, err := store.Open(filepath.Join(t.TempDir(), "sub", "dir", "s.db"), store.WithDefaultDurability(d))
				if err != nil {
					t.Fatal(err)
				}
				return db
			})
		})
	}
}
