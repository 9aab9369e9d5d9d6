package server

import (
	"encoding/json"

	"go.lsp.dev/protocol"
)

// didChangeWorkspaceFolders keeps the projects in step with the editor's
// folders. Neovim 0.7 sends "removed":[{}]: an empty folder is ignored.
func (s *Server) didChangeWorkspaceFolders(b *Backend, params json.RawMessage) error {
	p, err := decode[protocol.DidChangeWorkspaceFoldersParams]("workspace/didChangeWorkspaceFolders", params)
	if err != nil {
		return err
	}
	ws := b.Workspace
	for _, f := range p.Event.Removed {
		if f.URI != "" {
			ws.RemoveRoot(filename(string(f.URI)))
		}
	}
	for _, f := range p.Event.Added {
		if f.URI == "" {
			continue
		}
		if _, err := ws.Add(f.Name, filename(string(f.URI))); err != nil {
			s.notice(msgWarning, "cannot add workspace folder: %v", err)
		}
	}
	return nil
}
