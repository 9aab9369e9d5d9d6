package server

import (
	"encoding/json"
)

// didChangeWorkspaceFolders keeps the projects in step with the editor's
// folders. Neovim 0.7 sends "removed":[{}]: an empty folder is ignored.
func (s *Server) didChangeWorkspaceFolders(b *Backend, params json.RawMessage) error {
	p, err := decode[struct {
		Event struct {
			Added   []folder `json:"added"`
			Removed []folder `json:"removed"`
		} `json:"event"`
	}]("workspace/didChangeWorkspaceFolders", params)
	if err != nil {
		return err
	}
	ws := b.Workspace
	for _, f := range p.Event.Removed {
		if f.URI != "" {
			ws.RemoveRoot(filename(f.URI))
		}
	}
	for _, f := range p.Event.Added {
		if f.URI == "" {
			continue
		}
		if _, err := ws.Add(f.Name, filename(f.URI)); err != nil {
			s.notice(msgWarning, "cannot add workspace folder: %v", err)
		}
	}
	return nil
}
