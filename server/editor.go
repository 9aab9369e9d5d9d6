package server

import (
	"context"
	"fmt"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// editor is the agent's Editor port: every change is a workspace/applyEdit.
type editor struct {
	s      *Server
	review bool // annotate edits with needsConfirmation
}

const reviewAnnotation = "agent-lsp.review"

// Edit implements tools.Editor.
func (e *editor) Edit(ctx context.Context, fe tools.FileEdit) (tools.EditResult, error) {
	e.s.mu.Lock()
	ws := e.s.ws
	e.s.mu.Unlock()
	u := string(uri.File(fe.Path))
	var version any // null: the file is not open in the editor
	if doc, ok := ws.Document(fe.Path); ok && !fe.Create {
		version = doc.Version
	}
	var changes []any
	if fe.Create {
		cf := map[string]any{"kind": "create", "uri": u, "options": map[string]bool{"overwrite": false, "ignoreIfExists": false}}
		if e.review {
			cf["annotationId"] = reviewAnnotation
		}
		changes = append(changes, cf)
	}
	edits := make([]map[string]any, 0, len(fe.Edits))
	for _, te := range fe.Edits {
		r := protocol.Range{
			Start: protocol.Position{Line: te.Range.Start.Line, Character: te.Range.Start.Character},
			End:   protocol.Position{Line: te.Range.End.Line, Character: te.Range.End.Character},
		}
		m := map[string]any{"range": r, "newText": te.NewText}
		if e.review {
			m["annotationId"] = reviewAnnotation
		}
		edits = append(edits, m)
	}
	changes = append(changes, map[string]any{"textDocument": map[string]any{"uri": u, "version": version}, "edits": edits})
	we := map[string]any{"documentChanges": changes}
	if e.review {
		we["changeAnnotations"] = map[string]any{reviewAnnotation: map[string]any{
			"label": fe.Label, "needsConfirmation": true, "description": "proposed by agent-lsp; accept or reject"}}
	}
	var res protocol.ApplyWorkspaceEditResult
	if _, err := e.s.conn.Call(ctx, "workspace/applyEdit", map[string]any{"label": fe.Label, "edit": we}, &res); err != nil {
		return tools.EditResult{}, fmt.Errorf("workspace/applyEdit: %w", err)
	}
	out := tools.EditResult{Applied: res.Applied}
	if res.FailureReason != nil {
		out.FailureReason = *res.FailureReason
	}
	return out, nil
}

// permissions asks before commands other than the project's build and test run.
type permissions struct {
	s    *Server
	sink *sink
}

// Permission choices offered with window/showMessageRequest.
const (
	AllowOnce   = "Allow once"
	AllowAlways = "Always for this session"
	Deny        = "Deny"
)

// AllowCommand implements tools.Permissions: a deny pattern wins, then an
// allow pattern, then an earlier "always", else the user is asked.
func (p *permissions) AllowCommand(ctx context.Context, project, command string) (bool, error) {
	p.s.mu.Lock()
	st := p.s.st
	p.sink.mu.Lock()
	session := p.sink.session
	p.sink.mu.Unlock()
	always := p.s.always[session][command]
	p.s.mu.Unlock()
	switch {
	case matchAny(st.deny, command):
		return false, nil
	case matchAny(st.allow, command), always:
		return true, nil
	}
	var choice *protocol.MessageActionItem
	_, err := p.s.conn.Call(ctx, "window/showMessageRequest", map[string]any{
		"type":    protocol.MessageType(2), // warning
		"message": fmt.Sprintf("agent-lsp wants to run `%s` in project %s.", command, project),
		"actions": []protocol.MessageActionItem{{Title: AllowOnce}, {Title: AllowAlways}, {Title: Deny}},
	}, &choice)
	if err != nil {
		return false, err
	}
	if choice == nil {
		return false, nil
	}
	switch choice.Title {
	case AllowOnce:
		return true, nil
	case AllowAlways:
		p.s.mu.Lock()
		if p.s.always[session] == nil {
			p.s.always[session] = map[string]bool{}
		}
		p.s.always[session][command] = true
		p.s.mu.Unlock()
		return true, nil
	}
	return false, nil
}
