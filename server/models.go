package server

import (
	"context"
	"errors"
	"strings"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/model"
)

// The endpoint's models: agent.models, and the check of a model a run asks
// for.

// ModelsArgs are agent.models' arguments (none).
type ModelsArgs struct{}

// ModelsResult is agent.models' result.
type ModelsResult struct {
	BaseURL string            `json:"baseURL"`
	Current string            `json:"current"` // the model runs use unless they name one
	Models  []model.ModelInfo `json:"models"`
}

func (s *Server) modelsCommand(ctx context.Context, call commandCall, _ ModelsArgs) (ModelsResult, error) {
	if err := s.checkKey(call.b, "agent.models"); err != nil {
		return ModelsResult{}, err
	}
	list, err := call.b.Models(ctx)
	switch {
	case errors.Is(err, model.ErrKeyRefused) && call.b.Settings.APIKey == "":
		s.keys.refused(call.b.Settings.BaseURL)
		return ModelsResult{}, reasonError(reasonData(call.b, agent.ReasonNoAPIKey, "model.apiKeyEnv"), "agent.models: %v", err)
	case errors.Is(err, model.ErrKeyRefused):
		return ModelsResult{}, reasonError(reasonData(call.b, agent.ReasonKeyRefused, "model.apiKeyEnv"), "agent.models: %v", err)
	case errors.Is(err, model.ErrUnreachable):
		return ModelsResult{}, reasonError(reasonData(call.b, agent.ReasonUnreachable, "model.baseURL"), "agent.models: %v", err)
	case err != nil:
		return ModelsResult{}, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.models: %v", err)
	}
	return ModelsResult{BaseURL: call.b.Settings.BaseURL, Current: call.b.Settings.Model, Models: list}, nil
}

// checkModel refuses a model the endpoint does not offer, when it has a
// list; an endpoint without one (404) or out of reach is not asked twice:
// the run then says what the endpoint answers.
func (s *Server) checkModel(ctx context.Context, b *Backend, command, name string) error {
	if name == "" {
		return nil
	}
	list, err := b.Models(ctx)
	if err != nil {
		if !errors.Is(err, model.ErrNoModelList) {
			s.logf("%s: could not check model %q: %v", command, name, err)
		}
		return nil
	}
	if model.Offers(list, name) {
		return nil
	}
	ids := make([]string, len(list))
	for i, m := range list {
		ids[i] = m.ID
	}
	d := reasonData(b, agent.ReasonModelUnknown, "model.model")
	d.Model, d.Models = name, ids
	return reasonError(d, "%s: the endpoint %s does not offer the model %q; it offers: %s", command, b.Settings.BaseURL, name, strings.Join(ids, ", "))
}
