package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent/event"
)

// A window that follows another window's run and does not read (a frozen
// editor) never holds the run's reporter: sending to it returns at once,
// what waits for it is bounded, and once it reads again it gets the events
// kept, in order, with the dropped ones missing and counted in the log.
func TestFollowerThatDoesNotRead(t *testing.T) {
	toFollower, fromServer := io.Pipe() // nobody reads until the test does
	defer fromServer.Close()
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(pipes{strings.NewReader(""), fromServer}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follower := &client{conn: conn, ctx: ctx}
	var logMu sync.Mutex
	var logged []string
	logf := func(format string, args ...any) {
		logMu.Lock()
		logged = append(logged, fmt.Sprintf(format, args...))
		logMu.Unlock()
	}
	var w watchers
	runner := &client{}
	w.watch("s", follower, logf)

	const events, size = 400, 64 << 10 // 25 MB: three times what is kept
	summary := strings.Repeat("x", size)
	sent := make(chan struct{})
	go func() {
		for i := 1; i <= events; i++ {
			w.send(event.Event{Session: "s", Seq: int64(i), Data: event.ToolEnd{CallID: "c", Name: "read_file", OK: true, Summary: summary}}, runner)
		}
		w.send(event.Event{Session: "s", Seq: events + 1, Data: event.RunEnd{Status: "done"}}, runner)
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(time.Minute):
		t.Fatal("sending to a window that does not read blocked the run's reporter")
	}
	o := w.out[follower]
	o.mu.Lock()
	held := o.size
	o.mu.Unlock()
	if held > maxBacklog+size+1<<10 {
		t.Fatalf("%d bytes wait for the window; want at most %d", held, maxBacklog+size+1<<10)
	}
	w.sent(follower, 10*time.Millisecond) // the window does not read: this returns, after the wait

	// The window reads again.
	var got []int64
	var gotMu sync.Mutex
	reader := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(pipes{toFollower, nopCloser{io.Discard}}))
	reader.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		var e struct {
			Seq int64 `json:"seq"`
		}
		json.Unmarshal(req.Params(), &e)
		gotMu.Lock()
		got = append(got, e.Seq)
		gotMu.Unlock()
		return nil, nil
	})
	w.sent(follower, time.Minute) // a run of the window's own waits for this
	o.mu.Lock()
	idle, left := o.idle == nil, o.size
	o.mu.Unlock()
	if !idle || left != 0 {
		t.Fatalf("the outbox still sends %d bytes once sent returned (idle %v)", left, idle)
	}
	deadline := time.Now().Add(time.Minute)
	// What was written is read: the last frame may still be on its way.
	var n int
	for time.Now().Before(deadline) {
		gotMu.Lock()
		n = len(got)
		gotMu.Unlock()
		logMu.Lock()
		dropped := strings.Join(logged, "\n")
		logMu.Unlock()
		if strings.Contains(dropped, "dropped") && n+droppedCount(t, dropped) == events+1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	gotMu.Lock()
	defer gotMu.Unlock()
	if n == 0 || n == events+1 {
		t.Fatalf("the window got %d of %d events; want some kept and some dropped", n, events+1)
	}
	if got[len(got)-1] != events+1 {
		t.Fatalf("the last event the window got is seq %d; want the run's end, %d, which is never dropped", got[len(got)-1], events+1)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("events out of order: seq %d after %d", got[i], got[i-1])
		}
	}
	if got[0] != 1 {
		t.Fatalf("the first event kept is seq %d; want 1 (the oldest are kept)", got[0])
	}
	logMu.Lock()
	defer logMu.Unlock()
	if total := droppedCount(t, strings.Join(logged, "\n")); n+total != events+1 {
		t.Fatalf("got %d, log says %d dropped: %d events unaccounted for\n%s", n, total, events+1-n-total, strings.Join(logged, "\n"))
	}
}

// droppedCount sums the counts of the outbox's log lines.
func droppedCount(t *testing.T, log string) int {
	t.Helper()
	total := 0
	for _, line := range strings.Split(log, "\n") {
		_, count, ok := strings.Cut(line, ": ")
		var n int
		if _, err := fmt.Sscanf(count, "%d events dropped", &n); ok && err == nil {
			total += n
		}
	}
	return total
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
