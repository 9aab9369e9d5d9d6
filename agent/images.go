package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agent-lsp/agent-lsp/agent/images"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/tokens"
)

// ImageInput is an image the user attached to a prompt: a file (Path:
// absolute, or relative to the run's project) or its bytes (Data, with
// MimeType as the client says it; the bytes say what they are).
type ImageInput struct {
	Path     string
	Data     []byte
	MimeType string
	Name     string // what the model is told it is; default the file's name, or "pasted image"
}

// ImageError is a prompt's image that cannot be sent: unreadable, not an
// image, too large to decode, or a model that takes no images. The run does
// not start.
type ImageError struct{ Msg string }

func (e *ImageError) Error() string { return e.Msg }

// MaxPromptImages bounds the images of one prompt.
const MaxPromptImages = 20

// vision is nil when the run's model takes images, else an error saying why
// not that names the setting (Config.Vision).
func (rt *Runtime) vision(ctx context.Context, name string) error {
	if rt.cfg.Vision != nil {
		return rt.cfg.Vision(ctx, name)
	}
	if v, _ := model.KnownVision(name); v {
		return nil
	}
	return fmt.Errorf("the model %q is not known to take images: set model.vision to true (--vision true) if it does", name)
}

// seeing leaves read_image out of a run whose model takes no images.
func (rt *Runtime) seeing(ctx context.Context, r *run) {
	if _, ok := r.tools["read_image"]; ok && rt.vision(ctx, r.model) != nil {
		r.tools = r.tools.Without("read_image")
	}
}

// promptImages reads and prepares a prompt's images for the run's model,
// after checking that it takes images.
func (rt *Runtime) promptImages(ctx context.Context, r *run, project string, in []ImageInput) ([]message.ImageData, error) {
	if err := rt.takesImages(ctx, r.model, in); err != nil {
		return nil, err
	}
	return rt.readImages(project, in, rt.cfg.ImageMaxBytes)
}

// takesImages checks a prompt's images against the run's model: at most
// MaxPromptImages, and a model that takes images (by this runtime's
// Config.Vision: the settings of the window whose run it is).
func (rt *Runtime) takesImages(ctx context.Context, model string, in []ImageInput) error {
	if len(in) == 0 {
		return nil
	}
	if len(in) > MaxPromptImages {
		return &ImageError{fmt.Sprintf("a prompt may carry %d images, not %d", MaxPromptImages, len(in))}
	}
	if err := rt.vision(ctx, model); err != nil {
		return &ImageError{"the prompt has images, but " + err.Error()}
	}
	return nil
}

// readImages reads a prompt's images (a relative path is in project, of
// this runtime's workspace) and prepares each for the model, scaled to at
// most maxBytes.
func (rt *Runtime) readImages(project string, in []ImageInput, maxBytes int) ([]message.ImageData, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]message.ImageData, 0, len(in))
	for i, img := range in {
		data, name := img.Data, img.Name
		if img.Path != "" {
			path := img.Path
			if !filepath.IsAbs(path) {
				if p, ok := rt.cfg.Workspace.Project(project); ok {
					path = filepath.Join(p.Root(), path)
				}
			}
			b, err := readImageFile(path)
			if err != nil {
				return nil, &ImageError{fmt.Sprintf("image %d: %v", i+1, err)}
			}
			data = b
			if name == "" {
				name = rt.imageName(path)
			}
		} else if img.MimeType != "" && !strings.HasPrefix(img.MimeType, "image/") {
			return nil, &ImageError{fmt.Sprintf("image %d is %s, not an image", i+1, img.MimeType)}
		}
		if name == "" {
			name = "pasted image"
		}
		if len(data) == 0 {
			return nil, &ImageError{fmt.Sprintf("image %d (%s) has neither a path nor data", i+1, name)}
		}
		d, err := images.Prepare(data, name, maxBytes)
		if err != nil {
			return nil, &ImageError{err.Error()}
		}
		out = append(out, d)
	}
	return out, nil
}

// imageName is how the model is told of an image file: its path in its
// project, else its name.
func (rt *Runtime) imageName(path string) string {
	if p, ok := rt.cfg.Workspace.ProjectFor(path); ok {
		return p.Rel(path)
	}
	return filepath.Base(path)
}

// readImageFile reads an image file the user named: a regular file (never
// a FIFO, which would block, or a device), at most images.MaxInput bytes.
func readImageFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist", path)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > images.MaxInput {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d an image may have", path, fi.Size(), images.MaxInput)
	}
	return io.ReadAll(io.LimitReader(f, images.MaxInput+1))
}

// refs are the references of images a message holds.
func refs(imgs []message.ImageData) []message.Image {
	if len(imgs) == 0 {
		return nil
	}
	out := make([]message.Image, len(imgs))
	for i, d := range imgs {
		out[i] = d.Image
	}
	return out
}

// imageTokens is what a message's images cost a request (OpenAI's tile
// formula, tokens.Image); a tool message's images travel in a user message
// of their own, which costs its overhead too.
func imageTokens(m message.Message) int {
	if len(m.Images) == 0 {
		return 0
	}
	n := 0
	for _, img := range m.Images {
		n += tokens.Image(img.Width, img.Height) + tokens.Estimate(img.Name) + 8
	}
	if m.Role == message.Tool {
		n += messageOverhead
	}
	return n
}
