//go:build unix

package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// When the MCP settings change, the old source's servers stop, and a run
// that began under it and asks for tools again gets the new source's: no
// server starts under the retired source, which nothing would stop again.
func TestRetiredMCPSourceStartsNothing(t *testing.T) {
	ws := workspace.New(workspace.UTF8)
	p, err := ws.Add("p", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pool := &MCPPool{}
	source := func(def string) *MCPSource {
		s := config.Settings{MCPServers: json.RawMessage(def)}
		return &MCPSource{settings: s, ws: ws, getenv: func(string) string { return "" }, log: func(string) {}, pool: pool}
	}
	ctx := context.Background()
	first := source(`{"a": {"command": "true"}}`)
	first.Tools(ctx, p)
	if m, u := pool.shared(); m != 1 || u != 1 {
		t.Fatalf("after the first listing: %d managers, %d users", m, u)
	}
	second := source(`{"b": {"command": "true"}}`)
	first.Retire(second)
	if m, u := pool.shared(); m != 0 || u != 0 {
		t.Fatalf("after retiring: %d managers, %d users", m, u)
	}
	first.Tools(ctx, p) // a run of the old settings, at its next step
	if m, u := pool.shared(); m != 1 || u != 1 {
		t.Fatalf("a step of an old run: %d managers, %d users (want the new source's only)", m, u)
	}
	second.Close()
	if m, u := pool.shared(); m != 0 || u != 0 {
		t.Fatalf("after the last source closed: %d managers, %d users left running", m, u)
	}
}
