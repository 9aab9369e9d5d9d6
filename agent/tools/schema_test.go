//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

// TestCallChecksTheToolsSchema checks that a call's arguments are checked
// against the tool's Schema as it is when called: made by External (parsed
// once), changed since, or made by hand (parsed per call).
func TestCallChecksTheToolsSchema(t *testing.T) {
	run := func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		return Result{Content: "ran"}, nil
	}
	pathSchema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	countSchema := json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}}}`)
	made := External("t", "server", "", pathSchema, false, nil)
	made.Run = run
	changed := made
	changed.Schema = countSchema
	byHand := Tool{Name: "t", Schema: countSchema, Run: run}
	tests := []struct {
		name string
		tool Tool
		args string
		want string
	}{
		{"made, fits", made, `{"path":"a.go"}`, "ran"},
		{"made, missing", made, `{}`, `missing required argument "path"`},
		{"made, wrong type", made, `{"path":1}`, `argument "path" must be string, not integer`},
		{"changed, fits the new schema", changed, `{"count":3}`, "ran"},
		{"changed, old schema's argument", changed, `{"path":"a.go"}`, `unknown argument "path" (known: count)`},
		{"by hand, fits", byHand, `{"count":3}`, "ran"},
		{"by hand, wrong type", byHand, `{"count":"3"}`, `argument "count" must be integer, not string`},
		{"bad schema", Tool{Name: "t", Schema: json.RawMessage(`[`), Run: run}, `{}`, "bad schema"},
	}
	for _, tt := range tests {
		res := Set{"t": tt.tool}.Call(context.Background(), &Env{}, message.ToolCall{Name: "t", Args: tt.args})
		if !strings.Contains(res.Content, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, res.Content, tt.want)
		}
	}
}
