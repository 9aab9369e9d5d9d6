package acp

import (
	"errors"
	"strings"

	"github.com/coder/acp-go-sdk"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/server/session"
)

// acpImages are the image blocks of an ACP prompt: their data (base64), or
// the file a file: URI names when they carry none.
func acpImages(blocks []acp.ContentBlock) ([]agent.ImageInput, error) {
	var refs []session.ImageRef
	for _, c := range blocks {
		switch img := c.Image; {
		case img == nil:
		case img.Data != "":
			refs = append(refs, session.ImageRef{Data: img.Data, MimeType: img.MimeType})
		case img.Uri != nil && strings.HasPrefix(*img.Uri, "file:"):
			refs = append(refs, session.ImageRef{Path: uriPath(*img.Uri)})
		default:
			return nil, errors.New("an image block has neither data nor a file: URI")
		}
	}
	return session.ImageInputs("session/prompt", refs)
}
