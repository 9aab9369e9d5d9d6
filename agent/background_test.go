//go:build linux

package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// bgProcs lists the processes whose environment holds kv.
func bgProcs(kv string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(append(append([]byte{0}, b...), 0), []byte("\x00"+kv+"\x00")) {
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// In a server that goes on serving (this process), a run's background
// processes, its subagent's included, end when the run ends, and when it
// is cancelled; the next run does not see the last one's.
func TestBackgroundProcessesEndWithTheRun(t *testing.T) {
	for _, cancel := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancel=%v", cancel), func(t *testing.T) {
			mark := fmt.Sprintf("AGENT_LSP_BG_AGENT=%d-%d", os.Getpid(), time.Now().UnixNano())
			last := scripted.Turn{Text: "left it running"}
			if cancel {
				last = scripted.Turn{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 911"})}}
			}
			script := scripted.Script{Conversations: []scripted.Conversation{
				{Match: "in the subagent", Turns: []scripted.Turn{
					{ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "setsid sleep 912 & sleep 913", "background": true})}},
					{Text: "started"}}},
				{Turns: []scripted.Turn{
					{ToolCalls: []scripted.ToolCall{
						call("run_command", map[string]any{"command": "sleep 910", "background": true}),
						call("call_subagent", map[string]any{"task": "start one in the subagent"})}},
					last,
					{ToolCalls: []scripted.ToolCall{call("process_output", map[string]any{"id": "p1"})}},
					{Text: "gone"}}},
			}}
			h := newHarness(t, script, Config{CommandEnv: append(os.Environ(), mark)})
			if h.rt.cfg.Sandbox.ABI() == 0 {
				t.Skip("no Landlock")
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			if cancel {
				go func() {
					for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
						if all := strings.Join(bgProcs(mark), "\n"); strings.Contains(all, "sleep 911") && strings.Contains(all, "sleep 912") {
							break
						}
					}
					stop()
				}()
			}
			res := h.run(ctx, Request{Prompt: "start a server", Permissions: allowAll(true)})
			if cancel != (res.Status == "cancelled") {
				t.Fatalf("status %s", res.Status)
			}
			if ps := bgProcs(mark); len(ps) > 0 {
				t.Fatalf("left running after the run: %v", ps)
			}
			if !cancel {
				res := h.run(context.Background(), Request{Session: res.Session, Prompt: "look again", Permissions: allowAll(true)})
				reqs := h.srv.Requests()
				tm := toolMessages(reqs[len(reqs)-1])
				if res.Status != "done" || len(tm) == 0 || !strings.Contains(tm[len(tm)-1].Content, "no background process") {
					t.Fatalf("%s: %v", res.Status, tm)
				}
			}
		})
	}
}
