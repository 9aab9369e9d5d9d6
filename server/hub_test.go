//go:build unix

package server

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/server/lsptest"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/event"
)

// A window that follows another window's run and does not read (a frozen
// editor) never holds the run's reporter: sending to it returns at once,
// what waits for it is bounded, and once it reads again it gets the events
// kept, in order, and an events.dropped event standing for the ones
// dropped, just where they were missing; the run's end is never dropped.
func TestFollowerThatDoesNotRead(t *testing.T) {
	toFollower, fromServer := io.Pipe() // nobody reads until the test does
	defer fromServer.Close()
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(lsptest.Stream(strings.NewReader(""), fromServer)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follower := &client{conn: conn, ctx: ctx}
	follower.box = newOutbox(follower, func(string, ...any) {})
	var w agent.Broadcast
	w.Follow(follower)

	const events, size = 400, 64 << 10 // 25 MB: three times what is kept
	summary := strings.Repeat("x", size)
	sent := make(chan struct{})
	go func() {
		for i := 1; i <= events; i++ {
			w.Publish(event.Event{Session: "s", Seq: int64(i), Data: event.ToolEnd{CallID: "c", Name: "read_file", OK: true, Summary: summary}})
		}
		w.Publish(event.Event{Session: "s", Seq: events + 1, Data: event.RunEnd{Status: "done"}})
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(time.Minute):
		t.Fatal("sending to a window that does not read blocked the run's reporter")
	}
	o := follower.box
	o.mu.Lock()
	held := o.size
	o.mu.Unlock()
	if held > maxBacklog+2*size {
		t.Fatalf("%d bytes wait for the window; want at most %d", held, maxBacklog+2*size)
	}

	// The window reads again.
	got := readEvents(t, toFollower)
	<-o.mark() // everything queued is written
	o.mu.Lock()
	left := o.size
	o.mu.Unlock()
	if left != 0 {
		t.Fatalf("the outbox still holds %d bytes once drained", left)
	}
	checkSeqs(t, got(events+1), events+1)
}

// readEvents reads the agent/event notifications of r from now on; the
// function it returns waits (bounded) until the run's end with seq last
// came and returns them in order.
func readEvents(t *testing.T, r io.Reader) func(last int64) []map[string]any {
	reader := lsptest.New(lsptest.Stream(r, nopCloser{io.Discard}))
	t.Cleanup(func() { reader.Close() })
	return func(last int64) []map[string]any {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			got := reader.Events()
			if len(got) > 0 && got[len(got)-1]["type"] == "run.end" && int64(got[len(got)-1]["seq"].(float64)) == last {
				break
			}
		}
		return reader.Events()
	}
}

// checkSeqs checks that events hold seq 1..last of one session with none
// missing: each dropped range stood for by an events.dropped event where
// it was (its seq the range's last), some dropped, and the run's end last.
func checkSeqs(t *testing.T, events []map[string]any, last int64) {
	t.Helper()
	next, dropped, kept := int64(1), 0, 0
	for _, e := range events {
		seq := int64(e["seq"].(float64))
		if e["type"] == "events.dropped" {
			from, to, count := int64(e["fromSeq"].(float64)), int64(e["toSeq"].(float64)), int(e["count"].(float64))
			if from != next || to != seq || count != int(to-from+1) {
				t.Fatalf("events.dropped %v where seq %d was next", e, next)
			}
			dropped += count
			next = to + 1
			continue
		}
		if seq != next {
			t.Fatalf("seq %d (%s) where %d was next, and no events.dropped stood for it", seq, e["type"], next)
		}
		kept++
		next++
	}
	if next != last+1 || len(events) == 0 || events[len(events)-1]["type"] != "run.end" {
		t.Fatalf("the events end at seq %d (want the run's end, %d): %d kept, %d dropped", next-1, last, kept, dropped)
	}
	if dropped == 0 || kept < 2 {
		t.Fatalf("%d events kept and %d dropped: want some of each", kept, dropped)
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
