//go:build linux

package agent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// With BackgroundLinger, a background process outlives the run that is
// done: agent.processes lists it, the session's next run reaches it by its
// ID, and the runtime's Close (the window's end) ends it. Without a next
// run, it ends when the time is up.
func TestBackgroundLinger(t *testing.T) {
	for _, closeIt := range []bool{true, false} {
		t.Run(fmt.Sprintf("close=%v", closeIt), func(t *testing.T) {
			mark := fmt.Sprintf("AGENT_LSP_BG_LINGER=%d-%d", os.Getpid(), time.Now().UnixNano())
			linger := 10 * time.Minute
			turns := []scripted.Turn{
				{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 921", "background": true})}},
				{Text: "left it running"},
				{ToolCalls: []scripted.ToolCall{call("process_output", map[string]any{"id": "p1"})}},
				{Text: "still there"},
			}
			if !closeIt {
				linger, turns = 2*time.Second, turns[:2]
			}
			h := newHarness(t, scripted.Script{Turns: turns}, Config{CommandEnv: append(os.Environ(), mark), BackgroundLinger: linger})
			if h.rt.cfg.Sandbox.ABI() == 0 {
				t.Skip("no Landlock")
			}
			res := h.run(context.Background(), Request{Prompt: "start a server", Permissions: allowAll(true)})
			if res.Status != "done" {
				t.Fatalf("status %s: %s", res.Status, res.Error)
			}
			if !closeIt {
				for end := time.Now().Add(60 * time.Second); len(bgProcs(mark)) > 0 && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				}
				if ps := bgProcs(mark); len(ps) > 0 {
					t.Fatalf("still running a minute after a linger of 2s: %v", ps)
				}
				return
			}
			if ps := bgProcs(mark); len(ps) == 0 {
				t.Fatal("the process ended with its run")
			}
			if ps := h.reg.Processes(h.rt); len(ps) != 1 || ps[0].Session != res.Session || ps[0].ID != "p1" {
				t.Fatalf("processes %+v", ps)
			}
			res = h.run(context.Background(), Request{Session: res.Session, Prompt: "look again", Permissions: allowAll(true)})
			reqs := h.srv.Requests()
			tm := toolMessages(reqs[len(reqs)-1])
			if res.Status != "done" || len(tm) == 0 || !strings.Contains(tm[len(tm)-1].Content, "p1: running") {
				t.Fatalf("%s: %v", res.Status, tm)
			}
			h.rt.Close()
			if ps := bgProcs(mark); len(ps) > 0 {
				t.Fatalf("left running after Close: %v", ps)
			}
		})
	}
}
