package langserver

import (
	"context"
	"encoding/json"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// tsDiagnostic is one diagnostic of tsserver's own protocol: lines and
// offsets from 1, offsets in UTF-16 units.
type tsDiagnostic struct {
	Start    tsLocation `json:"start"`
	End      tsLocation `json:"end"`
	Text     string     `json:"text"`
	Code     int        `json:"code"`
	Category string     `json:"category"`
}

type tsLocation struct {
	Line   uint32 `json:"line"`
	Offset uint32 `json:"offset"`
}

func (l tsLocation) position() workspace.Position {
	return workspace.Position{Line: max(l.Line, 1) - 1, Character: max(l.Offset, 1) - 1}
}

var tsSeverity = map[string]int{"error": tools.SeverityError, "warning": tools.SeverityWarning, "message": tools.SeverityInfo, "suggestion": tools.SeverityHint}

// pullTS asks typescript-language-server's tsserver for each file's
// syntactic and semantic diagnostics of its current text
// (syntacticDiagnosticsSync, semanticDiagnosticsSync through
// typescript.tsserverRequest): the server's pushed diagnostics name no
// version and come in stages, and an older file's may arrive after a
// change. false when an answer did not come by deadline.
func (s *server) pullTS(ctx context.Context, marks []mark, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for _, mk := range marks {
		s.mu.Lock()
		conn, gen := s.conn, s.gen
		s.mu.Unlock()
		if conn == nil {
			return false
		}
		var items []tools.Diagnostic
		total := 0
		for _, cmd := range []string{"syntacticDiagnosticsSync", "semanticDiagnosticsSync"} {
			var res struct {
				Body []tsDiagnostic `json:"body"`
			}
			args := map[string]any{"command": "typescript.tsserverRequest", "arguments": []any{cmd, map[string]string{"file": string(uri.File(mk.path))}}}
			var raw json.RawMessage
			if _, err := conn.Call(ctx, "workspace/executeCommand", args, &raw); err != nil {
				return false
			}
			if json.Unmarshal(raw, &res) != nil {
				return false
			}
			total += len(res.Body)
			for _, d := range res.Body {
				if len(items) == maxPerFile {
					break
				}
				items = append(items, tools.Diagnostic{Range: workspace.Range{Start: d.Start.position(), End: d.End.position()},
					Severity: tsSeverity[d.Category], Message: tools.Clip(d.Text, 2000), Source: "typescript", Code: itoa(d.Code)})
			}
		}
		v := mk.version
		s.keep(gen, mk.path, items, total, &v, true)
	}
	return true
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	b, _ := json.Marshal(n)
	return string(b)
}
