package message

import (
	"encoding/json"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent/graph"
	"github.com/agent-lsp/agent-lsp/store"
)

// ImageData is an image with its bytes, as a session stores it once: the
// messages that show it hold its Image only.
type ImageData struct {
	Image
	Data []byte `json:"data"` // base64 in JSON
}

// Images are a session's images by ID. A value read from a state is shared:
// the caller must not modify it.
type Images map[string]ImageData

// ImageChannel is the key of a graph channel of images by ID. Add stores an
// image the first time it is added and never again: an image attached or
// read twice costs the store once. It is stored one record per image, so a
// step stores only the images it added; records go through the store's codec
// like every other.
type ImageChannel struct{ c *imageChannel }

// NewImageChannel declares an images channel in s.
func NewImageChannel(s *graph.Schema, name string) ImageChannel {
	c := &imageChannel{name: name}
	s.Declare(c)
	return ImageChannel{c}
}

// Add adds images; one whose ID is present already is left as it is.
func (k ImageChannel) Add(imgs ...ImageData) graph.Write {
	return graph.NewWrite(k.c, imageOp{Add: imgs})
}

// Get returns the images in s (nil before the first). The caller must not
// modify the map.
func (k ImageChannel) Get(s graph.State) Images {
	v, _ := s.Get(k.c).(Images)
	return v
}

// imageOp is one write of the channel; in pending writes {"add": [...]}.
type imageOp struct {
	Add []ImageData `json:"add,omitempty"`
}

type imageChannel struct{ name string }

func (c *imageChannel) Name() string    { return c.name }
func (c *imageChannel) Exclusive() bool { return false }

// Apply implements graph.Channel: the map is copied before it grows, so a
// state handed out earlier keeps its own.
func (c *imageChannel) Apply(cur any, o graph.Op) (any, graph.Change, error) {
	w, ok := o.(imageOp)
	if !ok {
		return nil, graph.Change{}, fmt.Errorf("an images channel cannot take %T", o)
	}
	have, _ := cur.(Images)
	next := have
	var ops []store.Op
	for _, img := range w.Add {
		if img.ID == "" || len(img.Data) == 0 {
			return nil, graph.Change{}, fmt.Errorf("an image without an id or bytes")
		}
		if _, dup := next[img.ID]; dup {
			continue
		}
		b, err := json.Marshal(img)
		if err != nil {
			return nil, graph.Change{}, err
		}
		if len(ops) == 0 { // the first new image of this write: copy before changing
			next = make(Images, len(have)+len(w.Add))
			for id, v := range have {
				next[id] = v
			}
		}
		next[img.ID] = img
		ops = append(ops, store.Op{Kind: store.OpAppend, ID: img.ID, Body: b})
	}
	return next, graph.Change{Ops: ops}, nil
}

// Load implements graph.Channel.
func (c *imageChannel) Load(_ json.RawMessage, items []store.Item) (any, error) {
	if len(items) == 0 {
		return Images(nil), nil
	}
	out := make(Images, len(items))
	for _, it := range items {
		var img ImageData
		if err := json.Unmarshal(it.Body, &img); err != nil {
			return nil, fmt.Errorf("image %s: %w", it.ID, err)
		}
		out[img.ID] = img
	}
	return out, nil
}

// Encode implements graph.Channel.
func (c *imageChannel) Encode(o graph.Op) (json.RawMessage, error) { return json.Marshal(o) }

// Decode implements graph.Channel.
func (c *imageChannel) Decode(raw json.RawMessage) (graph.Op, error) {
	var w imageOp
	err := json.Unmarshal(raw, &w)
	return w, err
}
