package server

import (
	"context"
	"fmt"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// reviewAnnotation is the change annotation of edits that need confirmation.
const reviewAnnotation = "agent-lsp.review"

// editor is a run's Editor port: every change is a workspace/applyEdit.
type editor struct {
	c      *client
	ws     *workspace.Workspace
	review bool   // annotate edits with needsConfirmation
	before func() // sends the run's queued events before the edit
}

// Edit implements tools.Editor.
func (e *editor) Edit(ctx context.Context, fe tools.FileEdit) (tools.EditResult, error) {
	e.before()
	res, err := e.c.applyEdit(ctx, fe.Label, e.workspaceEdit(fe))
	if err != nil {
		return tools.EditResult{}, fmt.Errorf("workspace/applyEdit: %w", err)
	}
	out := tools.EditResult{Applied: res.Applied}
	if res.FailureReason != nil {
		out.FailureReason = *res.FailureReason
	}
	return out, nil
}

// workspaceEdit turns a file edit into a WorkspaceEdit: a TextDocumentEdit
// with the version the server last saw (null for a file the editor has not
// open), after a CreateFile for a new file.
func (e *editor) workspaceEdit(fe tools.FileEdit) workspaceEdit {
	u := string(uri.File(fe.Path))
	annotation := ""
	if e.review {
		annotation = reviewAnnotation
	}
	var changes []any
	var version *int32
	if fe.Create {
		changes = append(changes, createFile{Kind: "create", URI: u, AnnotationID: annotation})
	} else if doc, ok := e.ws.Document(fe.Path); ok {
		version = &doc.Version
	}
	edits := make([]annotatedEdit, 0, len(fe.Edits))
	for _, te := range fe.Edits {
		edits = append(edits, annotatedEdit{Range: lspRange(te.Range), NewText: te.NewText, AnnotationID: annotation})
	}
	we := workspaceEdit{DocumentChanges: append(changes, textDocumentEdit{TextDocument: versionedDocument{URI: u, Version: version}, Edits: edits})}
	if e.review {
		we.ChangeAnnotations = map[string]changeAnnotation{reviewAnnotation: {
			Label: fe.Label, NeedsConfirmation: true, Description: "proposed by agent-lsp; accept or reject"}}
	}
	return we
}

func lspRange(r workspace.Range) protocol.Range {
	return protocol.Range{
		Start: protocol.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   protocol.Position{Line: r.End.Line, Character: r.End.Character},
	}
}
