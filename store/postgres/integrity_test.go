//go:build unix

package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agent-lsp/agent-lsp/store"
)

// Records are sealed (store.PackRecord): a body whose bytes changed in the
// database is left out of the load and named, never returned as data; the
// other records load.
func TestDamagedRecordLeftOut(t *testing.T) {
	u := freshSchema(t)
	var mu sync.Mutex
	var warned []string
	s := open(t, u, WithWarn(func(m string) { mu.Lock(); warned = append(warned, m); mu.Unlock() }))
	ctx := context.Background()
	err := s.Put(ctx, store.Checkpoint{Thread: "t", Step: 1, Status: store.StatusDone,
		Values: map[string]json.RawMessage{"v": json.RawMessage(`"value"`)},
		Lists:  map[string][]store.Op{"m": {{Kind: store.OpAppend, ID: "a", Body: json.RawMessage(`"greet.go"`)}, {Kind: store.OpAppend, ID: "b", Body: json.RawMessage(`"kept"`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	pool := pgxPoolFor(t, u)
	// One bit of item a's body and of the value flips: greet.go -> greet.oo.
	for _, q := range []string{
		`UPDATE agent_lsp_items SET body = overlay(body placing set_byte('\x00'::bytea, 0, get_byte(body, length(body) - 3) # 8) from length(body) - 2 for 1) WHERE id = 'a'`,
		`UPDATE agent_lsp_values SET body = overlay(body placing set_byte('\x00'::bytea, 0, get_byte(body, length(body) - 2) # 1) from length(body) - 1 for 1) WHERE name = 'v'`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Load(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Lists["m"]) != 1 || st.Lists["m"][0].ID != "b" || st.Values["v"] != nil {
		t.Fatalf("loaded %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if all := strings.Join(warned, "\n"); len(warned) != 2 || !strings.Contains(all, `value "v"`) || !strings.Contains(all, "list m") || !strings.Contains(all, "checksum mismatch") {
		t.Fatalf("warned %q", warned)
	}
}
