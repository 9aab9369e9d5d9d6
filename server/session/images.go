package session

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/images"
)

// ImageRef is an image attached to agent.run: a file (path: absolute, or
// relative to the run's project) or its bytes (data in base64, or a data:
// URL, with mimeType).
type ImageRef struct {
	Path     string `json:"path,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// ImageInputs are the images refs name, for the runtime: each a path or
// data, never both; data decoded from base64. Its errors (too many, too
// large, both or neither, not base64) name command and the image.
func ImageInputs(command string, refs []ImageRef) ([]agent.ImageInput, error) {
	if len(refs) > agent.MaxPromptImages {
		return nil, fmt.Errorf("%s: at most %d images, not %d", command, agent.MaxPromptImages, len(refs))
	}
	var out []agent.ImageInput
	for i, r := range refs {
		switch {
		case r.Path != "" && r.Data != "":
			return nil, fmt.Errorf("%s: images[%d] has both a path and data: give one", command, i)
		case r.Path != "":
			out = append(out, agent.ImageInput{Path: r.Path})
		case r.Data != "":
			data, mime := r.Data, r.MimeType
			if rest, ok := strings.CutPrefix(data, "data:"); ok {
				header, payload, _ := strings.Cut(rest, ",")
				data = payload
				if t, _, _ := strings.Cut(header, ";"); mime == "" {
					mime = t
				}
			}
			if base64.StdEncoding.DecodedLen(len(data)) > images.MaxInput {
				return nil, fmt.Errorf("%s: images[%d] is larger than %d bytes", command, i, images.MaxInput)
			}
			b, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				return nil, fmt.Errorf("%s: images[%d].data is not base64: %v", command, i, err)
			}
			out = append(out, agent.ImageInput{Data: b, MimeType: mime})
		default:
			return nil, fmt.Errorf("%s: images[%d] has neither a path nor data", command, i)
		}
	}
	return out, nil
}
