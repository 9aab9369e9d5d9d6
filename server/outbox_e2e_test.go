//go:build unix

package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// A window that stops reading never holds its own run: the run goes on to
// its next model call and its end while the window reads nothing (the
// server keeps about 8 MB of its events, then drops them). Once the window
// reads again, it gets the events kept in order, an events.dropped event
// exactly where the dropped ones were (fromSeq..toSeq, its seq toSeq), the
// run's end and the run's result. In-process and through the daemon. The
// run used to stop at its first turn (0 new requests in 22 s).
func TestRunOfAWindowThatStopsReading(t *testing.T) {
	for _, mode := range []string{"in-process", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 9<<20/45) // 9 MB of streamed text: its deltas and message
			srv := model(t, scripted.Script{Turns: []scripted.Turn{
				{Text: text, Chunk: 16 << 10, ToolCalls: []scripted.ToolCall{call("list_files", map[string]any{"pattern": "*.go"})}},
				{Text: "Done."},
			}})
			daemon := "AGENT_LSP_DAEMON=off"
			if mode == "daemon" {
				daemon = "AGENT_LSP_DAEMON=on"
			}
			r := startRaw(t, envFor(t, srv, daemon, "AGENT_LSP_DAEMON_IDLE=2s", "AGENT_LSP_LANDLOCK=false"))
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":%q,"capabilities":{},"initializationOptions":{"model":{"contextTokens":10000000}}}}`,
				uri.File(copyFixture(t, "sample"))))
			r.read()
			r.send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`)
			r.send(`{"jsonrpc":"2.0","id":2,"method":"workspace/executeCommand","params":{"command":"agent.run","arguments":[{"prompt":"Write a lot, then list the files"}]}}`)

			// The window reads nothing now; the run must reach its second turn.
			deadline := time.Now().Add(2 * time.Minute)
			for len(srv.Requests()) < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("the run is held by a window that does not read: %d model requests", len(srv.Requests()))
				}
				time.Sleep(50 * time.Millisecond)
			}

			var events []map[string]any
			var result map[string]any
			for result == nil {
				m, err := r.next()
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case m["method"] == "agent/event":
					events = append(events, m["params"].(map[string]any))
				case m["id"] != nil && m["method"] == nil && int(m["id"].(float64)) == 2:
					result = m
				}
			}
			if res, _ := result["result"].(map[string]any); res == nil || res["status"] != "done" || res["reply"] != "Done." {
				t.Fatalf("the run's result: %v", result)
			}
			dropped := checkDropped(t, events)
			if mode == "in-process" {
				// The range depends on how fast the pipe filled: the
				// fixture keeps the shape, with a range of its own.
				dropped["fromSeq"], dropped["toSeq"], dropped["count"], dropped["seq"] = 10, 40, 31, 40
				raw, _ := json.Marshal(dropped)
				n := &normalizer{seen: map[string]string{}, count: map[string]int{}}
				golden(t, filepath.Join(protocolDir, "events", "events.dropped.json"), []json.RawMessage{n.json(raw)})
			}
		})
	}
}

// checkDropped checks that events (one session's) hold every seq from 1 to
// the run's end, the ones missing stood for by one events.dropped each,
// where they were missing; it returns the first events.dropped.
func checkDropped(t *testing.T, events []map[string]any) map[string]any {
	t.Helper()
	var first map[string]any
	next, kept, dropped := int64(1), 0, 0
	for _, e := range events {
		seq := int64(e["seq"].(float64))
		if e["type"] == "events.dropped" {
			from, to, count := int64(e["fromSeq"].(float64)), int64(e["toSeq"].(float64)), int(e["count"].(float64))
			if from != next || to != seq || count != int(to-from+1) {
				t.Fatalf("events.dropped %v where seq %d was next", e, next)
			}
			if first == nil {
				first = e
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
	if len(events) == 0 || events[len(events)-1]["type"] != "run.end" {
		t.Fatalf("the last event is not the run's end: %d events", len(events))
	}
	if first == nil || kept < 2 {
		t.Fatalf("%d events kept and %d dropped: want some of each", kept, dropped)
	}
	t.Logf("%d events kept, %d dropped", kept, dropped)
	return first
}
