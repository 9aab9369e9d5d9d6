//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// The long run of the context issue, headless: 150 tool calls with 5 KB
// outputs under --context-tokens 6000 against a provider with that context.
// Every request holds the task and fits; older turns are compacted; the run
// ends done.
func TestHeadlessLongRunWithinContextTokens(t *testing.T) {
	const task = "Read big.txt 150 times and tell me what it holds."
	main := scripted.Conversation{Match: "Read big.txt"}
	for i := 0; i < 150; i++ {
		main.Turns = append(main.Turns, scripted.Turn{ToolCalls: []scripted.ToolCall{call("read_file", map[string]any{"path": "big.txt"})}})
	}
	main.Turns = append(main.Turns, scripted.Turn{Text: "It holds handlers."})
	sums := scripted.Conversation{Match: "Summarize the conversation"}
	for i := 0; i < 300; i++ {
		sums.Turns = append(sums.Turns, scripted.Turn{Text: fmt.Sprintf("Summary %d: big.txt was read again; it holds Go handlers.", i)})
	}
	c := newCLI(t)
	c.srv.SetScript(scripted.Script{ContextTokens: 6000, Conversations: []scripted.Conversation{sums, main}})
	var big strings.Builder
	for i := 0; big.Len() < 5000; i++ {
		fmt.Fprintf(&big, "func handler%d(w http.ResponseWriter, r *http.Request) error { return validate(r, %d) }\n", i, i)
	}
	os.WriteFile(filepath.Join(c.workspace, "big.txt"), []byte(big.String()[:5000]), 0o644)
	out, errOut, code := c.run(t, "", "run", "--workspace", c.workspace, "--context-tokens", "6000", "--max-steps", "400", "--json", task)
	evs, result := jsonLines(t, out)
	if code != 0 || result["status"] != "done" || result["reply"] != "It holds handlers." {
		t.Fatalf("exit %d, result %v, stderr %s", code, result, errOut)
	}
	if n := c.srv.Overflows(); n != 0 {
		t.Errorf("%d requests over the 6,000-token context", n)
	}
	turns := 0
	for i, req := range c.srv.Requests() {
		if strings.HasPrefix(req.Messages[1].Content, "Summarize the conversation") {
			continue
		}
		turns++
		if req.Messages[1].Content != task {
			t.Fatalf("request %d does not hold the task: %q", i, req.Messages[1].Content)
		}
	}
	compacted := 0
	for _, e := range evs {
		if e["type"] == "context.compacted" {
			compacted++
		}
		if e["type"] == "run.start" && e["contextTokens"] != float64(6000) {
			t.Errorf("run.start %v", e)
		}
	}
	if turns != 151 || compacted == 0 {
		t.Fatalf("%d turns, %d compactions", turns, compacted)
	}
}

// A prompt that cannot fit the context is a usage error: exit 2, naming both
// sizes, before any model call.
func TestHeadlessPromptTooLarge(t *testing.T) {
	c := newCLI(t, scripted.Turn{Text: "never"})
	prompt := strings.Repeat("explain this line of code to me please ", 2000)
	_, errOut, code := c.run(t, "", "run", "--workspace", c.workspace, "--context-tokens", "4000", prompt)
	if code != 2 || !strings.Contains(errOut, "contextTokens 4000") || !strings.Contains(errOut, "need about") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(c.srv.Requests()) != 0 {
		t.Fatal("the model was called")
	}
}
