package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/model"
)

// vision answers which models take images, by the model.vision setting:
// true or false for every model; auto for the well-known ones
// (model.KnownVision), else by what the endpoint's model list says of the
// model, asked once per endpoint (a backend's model) and remembered.
type vision struct {
	setting string
	m       *model.OpenAI

	mu     sync.Mutex        // guards asked and models
	asked  bool              // the endpoint answered the list (or has none)
	models []model.ModelInfo // what it listed
}

func newVision(setting string, m *model.OpenAI) *vision {
	return &vision{setting: setting, m: m}
}

// check implements agent.Config.Vision.
func (v *vision) check(ctx context.Context, name string) error {
	switch v.setting {
	case "true":
		return nil
	case "false":
		return fmt.Errorf("model.vision is false: set it to true or auto (--vision) if the model %q takes images", name)
	}
	if yes, known := model.KnownVision(name); known {
		if yes {
			return nil
		}
		return fmt.Errorf("the model %q takes no images: use a model that does, or set model.vision to true (--vision true) if it does", name)
	}
	if said := v.list(ctx, name); said != nil {
		if *said {
			return nil
		}
		return fmt.Errorf("the endpoint's model list says the model %q takes no images: set model.vision to true (--vision true) if it does", name)
	}
	return fmt.Errorf("the model %q is not known to take images: set model.vision to true (--vision true) if it does", name)
}

// list is what the endpoint's model list says of name's images: the list
// asked once for every model (an endpoint without a list says nothing; one
// out of reach is asked again next time).
func (v *vision) list(ctx context.Context, name string) *bool {
	v.mu.Lock()
	asked, models := v.asked, v.models
	v.mu.Unlock()
	if !asked {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		if models, err = v.m.Models(ctx); err != nil && !errors.Is(err, model.ErrNoModelList) {
			return nil // not remembered: the endpoint may answer later
		}
		v.mu.Lock()
		v.asked, v.models = true, models
		v.mu.Unlock()
	}
	var said *bool
	for _, mi := range models {
		if mi.ID == name || (!strings.Contains(name, ":") && mi.ID == name+":latest") {
			said = mi.Vision
		}
	}
	return said
}
