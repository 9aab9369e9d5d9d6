package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent/images"
	"github.com/agent-lsp/agent-lsp/agent/message"
)

var readImage = Tool{
	Name: "read_image",
	Description: "Look at an image file of the project (PNG, JPEG, GIF or WebP): a screenshot, a diagram, an icon. " +
		"The image is shown to you after this call's result; large ones are scaled down.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"path": {"type": "string", "description": "Image file path relative to the project root."},
		` + projectArg + `}, "required": ["path"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct{ Path, Project string }
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		if env.Vision != nil {
			if err := env.Vision(ctx); err != nil {
				return errorf("read_image cannot show you images: %v", err)
			}
		}
		p, abs, err := env.resolve(a.Project, a.Path)
		if err != nil {
			return errorf("%v", err)
		}
		rel := p.Rel(abs)
		b, err := env.Workspace.ReadFile(p, abs, images.MaxInput)
		if err != nil {
			return errorf("%v", err)
		}
		img, err := images.Prepare(b, rel, env.ImageMaxBytes)
		if err != nil {
			return errorf("%v", err)
		}
		note := ""
		if img.Size != len(b) {
			note = fmt.Sprintf(", scaled down from %d bytes", len(b))
		}
		return Result{Content: fmt.Sprintf("%s: %d×%d %s, %d bytes%s; the image follows.", rel, img.Width, img.Height, img.MimeType, img.Size, note),
			Summary: "looked at " + rel, Images: []message.ImageData{img}}, nil
	},
}
