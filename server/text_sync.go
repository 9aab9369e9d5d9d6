package server

import (
	"encoding/json"

	"go.lsp.dev/protocol"

	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// The server keeps the editor's open documents (textDocumentSync: incremental)
// so that the agent reads unsaved buffers, and knows which have unsaved
// changes (didSave) so that commands are not run on a disk without them.

func (s *Server) didOpen(b *Backend, params json.RawMessage) error {
	p, err := decode[protocol.DidOpenTextDocumentParams]("textDocument/didOpen", params)
	if err != nil {
		return err
	}
	b.Workspace.Open(filename(string(p.TextDocument.URI)), p.TextDocument.Version, p.TextDocument.Text)
	return nil
}

func (s *Server) didChange(b *Backend, params json.RawMessage) error {
	p, err := decode[protocol.DidChangeTextDocumentParams]("textDocument/didChange", params)
	if err != nil {
		return err
	}
	changes := make([]workspace.Change, 0, len(p.ContentChanges))
	for _, c := range p.ContentChanges {
		switch c := c.(type) {
		case *protocol.TextDocumentContentChangePartial:
			r := workspaceRange(c.Range)
			changes = append(changes, workspace.Change{Range: &r, Text: c.Text})
		case *protocol.TextDocumentContentChangeWholeDocument:
			changes = append(changes, workspace.Change{Text: c.Text})
		}
	}
	return b.Workspace.Change(filename(string(p.TextDocument.URI)), p.TextDocument.Version, changes)
}

func (s *Server) didSave(b *Backend, params json.RawMessage) error {
	p, err := decode[protocol.DidSaveTextDocumentParams]("textDocument/didSave", params)
	if err != nil {
		return err
	}
	b.Workspace.Saved(filename(string(p.TextDocument.URI)))
	return nil
}

func (s *Server) didClose(b *Backend, params json.RawMessage) error {
	p, err := decode[protocol.DidCloseTextDocumentParams]("textDocument/didClose", params)
	if err != nil {
		return err
	}
	b.Workspace.Close(filename(string(p.TextDocument.URI)))
	return nil
}

func workspaceRange(r protocol.Range) workspace.Range {
	return workspace.Range{
		Start: workspace.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   workspace.Position{Line: r.End.Line, Character: r.End.Character},
	}
}

// filename turns a file URI into a path of this platform (session.Filename).
func filename(u string) string { return session.Filename(u) }
