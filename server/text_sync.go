package server

import (
	"encoding/json"
	"runtime"
	"strings"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// The server keeps the editor's open documents (textDocumentSync: incremental)
// so that the agent reads unsaved buffers, and knows which have unsaved
// changes (didSave) so that commands are not run on a disk without them.

func (s *Server) didOpen(b *Backend, params json.RawMessage) error {
	p, err := decode[struct {
		TextDocument struct {
			URI     string `json:"uri"`
			Version int32  `json:"version"`
			Text    string `json:"text"`
		} `json:"textDocument"`
	}]("textDocument/didOpen", params)
	if err != nil {
		return err
	}
	b.Workspace.Open(filename(p.TextDocument.URI), p.TextDocument.Version, p.TextDocument.Text)
	return nil
}

func (s *Server) didChange(b *Backend, params json.RawMessage) error {
	p, err := decode[struct {
		TextDocument struct {
			URI     string `json:"uri"`
			Version int32  `json:"version"`
		} `json:"textDocument"`
		ContentChanges []struct {
			Range *workspace.Range `json:"range"`
			Text  string           `json:"text"`
		} `json:"contentChanges"`
	}]("textDocument/didChange", params)
	if err != nil {
		return err
	}
	changes := make([]workspace.Change, len(p.ContentChanges))
	for i, c := range p.ContentChanges {
		changes[i] = workspace.Change{Range: c.Range, Text: c.Text}
	}
	return b.Workspace.Change(filename(p.TextDocument.URI), p.TextDocument.Version, changes)
}

func (s *Server) didSave(b *Backend, params json.RawMessage) error {
	p, err := decode[struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
	}]("textDocument/didSave", params)
	if err != nil {
		return err
	}
	b.Workspace.Saved(filename(p.TextDocument.URI))
	return nil
}

func (s *Server) didClose(b *Backend, params json.RawMessage) error {
	p, err := decode[struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
	}]("textDocument/didClose", params)
	if err != nil {
		return err
	}
	b.Workspace.Close(filename(p.TextDocument.URI))
	return nil
}

// filename turns a file URI into a path of this platform.
func filename(u string) string { return filenameOn(hostPlatform(), u) }

// hostPlatform is how this platform spells paths in file URIs.
func hostPlatform() uri.Platform {
	if runtime.GOOS == "windows" {
		return uri.PlatformWindows
	}
	return uri.PlatformPOSIX
}

// filenameOn turns a file URI into a path of platform, as VS Code does:
// file:///c%3A/Users/me/a.go is c:\Users\me\a.go on Windows.
func filenameOn(platform uri.Platform, u string) string {
	if !strings.HasPrefix(u, "file:") {
		return u
	}
	if parsed, err := uri.Parse(u); err == nil {
		return uri.FsPathFor(parsed, platform, false)
	}
	return strings.TrimPrefix(u, "file://")
}
