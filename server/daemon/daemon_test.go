package daemon

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"

	"github.com/agent-lsp/agent-lsp/store"
)

// A panic while serving one connection ends that connection, never the
// daemon: the next connection is served.
func TestPanicInAConnectionKeepsTheDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	d, err := Open(context.Background(), Config{Store: path, Idle: -1,
		Sessions: func(context.Context, *store.Bolt, func(string) bool, []string, io.Writer, io.Writer) int {
			panic("a bug")
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- d.Serve(ctx) }()
	if _, err := RunSessions(path, []string{"list"}); err == nil {
		t.Fatal("the panicking command reported success")
	}
	st, err := StatusOf(path)
	if err != nil || st.Store != path || st.Version != Version() {
		t.Fatalf("after a panic: %+v %v", st, err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if _, err := StatusOf(path); !IsNoDaemon(err) {
		t.Fatalf("after Serve ended: %v", err)
	}
}

func TestNewer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"0.2.0", "0.1.9", true}, {"0.2.0", "0.2.0", false}, {"0.10.0", "0.9.0", true},
		{"1.0", "0.9.9", true}, {"0.2.0-dev", "0.2.0", false}, {"v0.3.0", "0.2.5", true}, {"0.2", "0.2.1", false},
	} {
		if got := newer(c.a, c.b); got != c.want {
			t.Errorf("newer(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// A connection that begins to be served as the daemon closes (its Welcome
// written, its server not yet tracked when Close cancelled the others) is
// cancelled as soon as it is tracked: Close waits for it, and would wait
// for as long as its client stayed.
func TestTrackedAfterCloseIsCancelled(t *testing.T) {
	d := &Daemon{cfg: Config{Idle: -1, Logf: func(string, ...any) {}}, conns: map[net.Conn]func(){}, quit: make(chan struct{})}
	d.closed = true
	c, other := net.Pipe()
	defer c.Close()
	defer other.Close()
	cancelled := false
	d.track(c, func() { cancelled = true })
	if !cancelled {
		t.Fatal("a connection tracked after Close began was not cancelled")
	}
	d.untrack(c)
}
