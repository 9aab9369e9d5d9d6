package server

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Bounds of what the editor's language answers may hold, as the language
// servers agent-lsp starts are bounded.
const (
	maxEditorDiagnostics = 500  // per file
	maxEditorFiles       = 5000 // files with diagnostics
	// editorAskTimeout bounds one agent/languageRequest.
	editorAskTimeout = 30 * time.Second
)

// editorLanguage is a run's tools.Language for a client that advertises
// experimental.language: the editor's own language features answer, through
// agent/diagnostics and agent/languageRequest. Positions are in the
// connection's encoding.
type editorLanguage struct {
	c      *client
	ws     *workspace.Workspace
	wait   time.Duration // how long the editor may wait for an edited file's diagnostics
	before func()        // sends the run's queued events before a request
}

// DiagnosticsParams are agent/diagnostics' params: the documents whose
// diagnostics the server wants (none: every document the editor has
// diagnostics for), and, with settle, how many milliseconds the editor may
// wait for those of the documents' current versions.
type DiagnosticsParams struct {
	URIs   []string `json:"uris"`
	Settle int      `json:"settle,omitzero"` // omitzero: the connection encodes with json/v2, whose omitempty keeps 0
}

// DiagnosticsResult is the client's answer to agent/diagnostics: LSP
// Diagnostics per document; settled is false when the wait ran out first.
type DiagnosticsResult struct {
	Items []struct {
		URI         string            `json:"uri"`
		Diagnostics []json.RawMessage `json:"diagnostics"`
	} `json:"items"`
	Settled *bool `json:"settled,omitempty"`
}

// LanguageRequestParams are agent/languageRequest's params: one of the
// requests of tools.LangMethods, with LSP's params.
type LanguageRequestParams struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// Diagnostics implements tools.Language: the edited files' diagnostics,
// waited for, then every file's (the project's are kept).
func (e *editorLanguage) Diagnostics(ctx context.Context, q tools.LangQuery) (tools.LangReport, error) {
	rep := tools.LangReport{Server: "the editor", Encoding: e.ws.Encoding(), Settled: true, Wait: e.wait}
	e.before()
	if len(q.Files) > 0 && q.Settle {
		uris := make([]string, len(q.Files))
		for i, f := range q.Files {
			uris[i] = string(uri.File(f))
		}
		res, err := e.diagnostics(ctx, DiagnosticsParams{URIs: uris, Settle: int(e.wait / time.Millisecond)}, e.wait+5*time.Second)
		if err != nil {
			return rep, err
		}
		// Not settled, the editor's empty list may only mean its server has
		// not checked the new text yet: never read it as "no errors".
		rep.Settled = res.Settled == nil || *res.Settled
	}
	res, err := e.diagnostics(ctx, DiagnosticsParams{URIs: []string{}}, 10*time.Second)
	if err != nil {
		return rep, err
	}
	root := filepath.Clean(q.Project.Root())
	for _, it := range res.Items {
		path := tools.FilePath(it.URI)
		if path == "" || !(path == root || strings.HasPrefix(path, root+string(filepath.Separator))) || len(it.Diagnostics) == 0 {
			continue // a document of another project, or not a file
		}
		if len(rep.Files) == maxEditorFiles {
			break
		}
		fd := tools.FileDiagnostics{Path: path}
		for _, raw := range it.Diagnostics[:min(len(it.Diagnostics), maxEditorDiagnostics)] {
			fd.Items = append(fd.Items, lspDiagnostic(raw))
		}
		rep.Files = append(rep.Files, fd)
	}
	sort.Slice(rep.Files, func(i, j int) bool { return rep.Files[i].Path < rep.Files[j].Path })
	return rep, nil
}

// diagnostics sends one agent/diagnostics, bounded by timeout.
func (e *editorLanguage) diagnostics(ctx context.Context, p DiagnosticsParams, timeout time.Duration) (DiagnosticsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res DiagnosticsResult
	if _, err := e.c.conn.Call(ctx, "agent/diagnostics", p, &res); err != nil {
		return res, fmt.Errorf("the editor's diagnostics (agent/diagnostics): %w", err)
	}
	return res, nil
}

// lspDiagnostic reads an LSP Diagnostic leniently.
func lspDiagnostic(raw json.RawMessage) tools.Diagnostic {
	var w struct {
		Range    workspace.Range `json:"range"`
		Severity int             `json:"severity"`
		Code     json.RawMessage `json:"code"`
		Source   string          `json:"source"`
		Message  json.RawMessage `json:"message"`
	}
	json.Unmarshal(raw, &w)
	d := tools.Diagnostic{Range: w.Range, Severity: w.Severity, Source: clipText(w.Source, 100)}
	d.Message, d.Code = tools.DiagnosticText(w.Message, w.Code)
	return d
}

// Ask implements tools.Language: agent/languageRequest with LSP's params,
// positions computed from the file's text as the tools read it.
func (e *editorLanguage) Ask(ctx context.Context, q tools.LangQuery, r tools.LangRequest) (json.RawMessage, error) {
	if !slices.Contains(tools.LangMethods, r.Method) {
		return nil, fmt.Errorf("%s is not a request the language tools send", r.Method)
	}
	var text, u string
	if r.Path != "" {
		var err error
		if text, err = q.Read(ctx, r.Path); err != nil {
			return nil, err
		}
		u = string(uri.File(r.Path))
	}
	e.before()
	ctx, cancel := context.WithTimeout(ctx, editorAskTimeout)
	defer cancel()
	var raw json.RawMessage
	params := LanguageRequestParams{Method: r.Method, Params: tools.LangParams(r, u, text, e.ws.Encoding())}
	if _, err := e.c.conn.Call(ctx, "agent/languageRequest", params, &raw); err != nil {
		return nil, fmt.Errorf("the editor's %s (agent/languageRequest): %w", r.Method, err)
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	return raw, nil
}

// Encoding implements tools.Language: the connection's position encoding.
func (e *editorLanguage) Encoding(*workspace.Project) workspace.Encoding { return e.ws.Encoding() }
