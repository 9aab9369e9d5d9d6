//go:build unix

package server

import (
	"context"
	"encoding/json"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/server/lsptest"
)

// TestNoGoroutineLeak serves 50,000 requests in process and checks that the
// goroutine count returns to where it was.
func TestNoGoroutineLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	before := runtime.NumGoroutine()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan error, 1)
	dir := t.TempDir()
	env := map[string]string{"AGENT_LSP_STORE": dir + "/s.db", "HOME": dir}
	go func() {
		done <- Serve(context.Background(), c2sR, s2cW, Options{Getenv: func(k string) string { return env[k] }})
		s2cW.Close()
	}()
	conn := lsptest.New(lsptest.Stream(s2cR, c2sW))
	ctx := context.Background()
	if err := conn.Call(ctx, "initialize", map[string]any{"rootUri": "file://" + dir, "capabilities": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50000; i++ {
		var out json.RawMessage
		if err := conn.Command(ctx, "agent.sessions", map[string]any{}, &out); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	mid := runtime.NumGoroutine()
	conn.Call(ctx, "shutdown", nil, nil)
	conn.Notify(ctx, "exit", nil)
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	conn.Close()
	deadline := time.Now().Add(time.Minute) // goroutines may take a while to end on a loaded machine
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d while serving, %d after\n%s", before, mid, after, buf[:runtime.Stack(buf, true)])
	}
	if mid > before+40 {
		t.Fatalf("goroutines grew to %d while serving 50,000 requests (from %d)", mid, before)
	}
}
