// Package pgtest gives tests a PostgreSQL database of their own: the
// server AGENT_LSP_TEST_POSTGRES names (scripts/postgres.sh starts one),
// in a fresh schema dropped when the test ends. Without it a test skips,
// except in CI (CI=true), where it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Env names the variable that holds the test server's URL.
const Env = "AGENT_LSP_TEST_POSTGRES"

// ServerURL returns the test server's URL, or skips t (fails it in CI).
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		msg := Env + ` is unset: start a throwaway cluster with eval "$(scripts/postgres.sh)" to run the PostgreSQL tests`
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: they must run)")
		}
		t.Skip(msg)
	}
	return u
}

// WithParam returns rawURL with the query parameter key set to value.
func WithParam(t testing.TB, rawURL, key, value string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// FreshSchema creates an empty schema on the test server and returns the
// URL that uses it (search_path); the schema is dropped when t ends.
func FreshSchema(t testing.TB) string {
	t.Helper()
	base := ServerURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to the test server (%s): %v", Env, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "agent_lsp_t_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return WithParam(t, base, "search_path", name)
}
