//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/google/jsonschema-go/jsonschema"
)

// resultSchema is docs/result.schema.json, resolved.
var resultSchema = sync.OnceValues(func() (*jsonschema.Resolved, error) {
	b, err := os.ReadFile("../../docs/result.schema.json")
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
})

// checkResultLine fails the test unless line is valid against
// docs/result.schema.json: every result line the tests read goes through it
// (jsonLines).
func checkResultLine(t *testing.T, line string) {
	t.Helper()
	rs, err := resultSchema()
	if err != nil {
		t.Fatalf("docs/result.schema.json: %v", err)
	}
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("result line: %v", err)
	}
	if err := rs.Validate(v); err != nil {
		t.Fatalf("the result line is not valid against docs/result.schema.json: %v\n%s", err, line)
	}
}

// TestResultSchemaRejects: the schema the result lines are checked against
// refuses lines that break the contract (so that passing it means something).
func TestResultSchemaRejects(t *testing.T) {
	rs, err := resultSchema()
	if err != nil {
		t.Fatal(err)
	}
	good := `{"type":"result","schemaVersion":1,"session":"s-1","status":"done","reply":"ok","edits":0,"steps":1,
		"usage":{"promptTokens":1,"completionTokens":1,"totalTokens":2},"denied":[],"filesChanged":[]}`
	for name, edit := range map[string]func(m map[string]any){
		"valid":                   func(map[string]any) {},
		"no schemaVersion":        func(m map[string]any) { delete(m, "schemaVersion") },
		"another schemaVersion":   func(m map[string]any) { m["schemaVersion"] = 2 },
		"an unknown status":       func(m map[string]any) { m["status"] = "finished" },
		"failed without error":    func(m map[string]any) { m["status"] = "failed" },
		"limit without which":     func(m map[string]any) { m["status"] = "limit" },
		"a denial without what":   func(m map[string]any) { m["denied"] = []any{map[string]any{"tool": "run_command"}} },
		"a file without counts":   func(m map[string]any) { m["filesChanged"] = []any{map[string]any{"path": "a.go"}} },
		"no denied list":          func(m map[string]any) { delete(m, "denied") },
		"an unknown reason":       func(m map[string]any) { m["reason"] = "bad-luck" },
		"negative steps":          func(m map[string]any) { m["steps"] = -1 },
		"a cost that is a string": func(m map[string]any) { m["cost"] = "$1" },
	} {
		var m map[string]any
		json.Unmarshal([]byte(good), &m)
		edit(m)
		err := rs.Validate(m)
		if (name == "valid") != (err == nil) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !strings.Contains(good, `"schemaVersion":1`) {
		t.Fatal("the good line lost its version")
	}
}

// TestNothingAfterTheResult: the result line is the last line of --json
// output, even when the session goes on and its events still arrive (a
// prompt queued into another run's session).
func TestNothingAfterTheResult(t *testing.T) {
	var out strings.Builder
	cl := &client{json: true, out: bufio.NewWriter(&out), errw: io.Discard}
	cl.printEvent(json.RawMessage(`{"type":"run.start","session":"s-1"}`))
	cl.printResult(resultLine{Result: agent.Result{Session: "s-1", Status: agent.StatusQueued, Position: 1}}, &out)
	cl.printEvent(json.RawMessage(`{"type":"text","session":"s-1","text":"later"}`))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `"type":"result"`) {
		t.Fatalf("output:\n%s", out.String())
	}
}
