package server

import (
	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/server/session"
)

// ImageRef is an image attached to agent.run: a file (path: absolute, or
// relative to the run's project) or its bytes (data in base64, or a data:
// URL, with mimeType).
type ImageRef = session.ImageRef

// imageInputs are agent.run's images for the runtime (session.ImageInputs);
// an error is the request's (InvalidParams).
func imageInputs(command string, refs []ImageRef) ([]agent.ImageInput, error) {
	in, err := session.ImageInputs(command, refs)
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	return in, nil
}
