package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/session"
)

// Failing fast and in plain words: a run that cannot succeed with the
// settings it has (no API key for an endpoint that needs one, a model the
// endpoint does not offer) is refused before any request leaves, with a
// JSON-RPC error whose data names the reason and what fixes it, so that each
// client renders its own action (VS Code's Set API Key, Neovim's options,
// the CLI's flags). A run that fails for such a reason later (the endpoint
// refused the key) says so in its result's reason.

// ReasonData is the data of a JSON-RPC error refused for a Reason, and of
// agent.endpoint's answer: what the next runs would use (session.ReasonData).
type ReasonData = session.ReasonData

// reasonError is a JSON-RPC error (InvalidParams: the request cannot be
// served with these settings) carrying data.
func reasonError(data ReasonData, format string, args ...any) error {
	e := jsonrpc2.Errorf(jsonrpc2.InvalidParams, format, args...)
	e.Data, _ = json.Marshal(data)
	return e
}

// keyGate knows which endpoints need an API key: OpenAI's, and any that
// refused a request without one (401) since this server started.
type keyGate struct {
	mu    sync.Mutex      // guards wants
	wants map[string]bool // base URLs that answered 401 to a request without a key
}

// NeedsKey reports whether baseURL is known to need an API key when key is
// empty (session.NeedsKey). (A server also knows the endpoints that refused
// a request without one.)
func NeedsKey(baseURL, key string) bool { return session.NeedsKey(baseURL, key) }

// needsKey reports whether baseURL needs a key the settings do not have.
func (g *keyGate) needsKey(baseURL, key string) bool {
	if key != "" {
		return false
	}
	if NeedsKey(baseURL, key) {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wants[strings.TrimRight(baseURL, "/")]
}

// refused records that baseURL refused a request without a key.
func (g *keyGate) refused(baseURL string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wants == nil {
		g.wants = map[string]bool{}
	}
	g.wants[strings.TrimRight(baseURL, "/")] = true
}

// ReasonDataOf is the ReasonData of settings st for reason and the setting
// that fixes it (session.ReasonDataOf).
func ReasonDataOf(st config.Settings, reason, setting string) ReasonData {
	return session.ReasonDataOf(st, reason, setting)
}

// reasonData is b's endpoint as a ReasonData for reason.
func reasonData(b *Backend, reason, setting string) ReasonData {
	return ReasonDataOf(b.Settings, reason, setting)
}

// checkKey refuses, before any request leaves, a command that would call
// an endpoint that needs a key when there is none.
func (s *Server) checkKey(b *Backend, command string) error {
	if !s.keys.needsKey(b.Settings.BaseURL, b.Settings.APIKey) {
		return nil
	}
	d := reasonData(b, agent.ReasonNoAPIKey, "model.apiKeyEnv")
	return reasonError(d, "%s: no API key: %s needs one, and %s is not set (set it, or point model.baseURL at a server that needs none)",
		command, d.BaseURL, d.APIKeyEnv)
}

// learn takes what a run's result teaches: an endpoint that refused a
// request without a key needs one (and the result says no-api-key).
func (s *Server) learn(b *Backend, res *agent.Result) {
	if res.Reason == agent.ReasonKeyRefused && b.Settings.APIKey == "" {
		s.keys.refused(b.Settings.BaseURL)
		res.Reason = agent.ReasonNoAPIKey
		res.Error = fmt.Sprintf("%s needs an API key and %s is not set", strings.TrimRight(b.Settings.BaseURL, "/"), b.Settings.APIKeyEnv)
	}
}

// EndpointArgs are agent.endpoint's arguments (none).
type EndpointArgs struct{}

// EndpointResult is agent.endpoint's result: what the next runs use.
type EndpointResult struct {
	BaseURL   string `json:"baseURL"`
	Model     string `json:"model"`
	APIKeyEnv string `json:"apiKeyEnv"`
	KeySet    bool   `json:"keySet"`
	// NeedsKey: the endpoint needs a key and none is set; runs are refused
	// with data.reason no-api-key.
	NeedsKey bool `json:"needsKey"`
}

func (s *Server) endpointCommand(_ context.Context, call commandCall, _ EndpointArgs) (EndpointResult, error) {
	st := call.b.Settings
	return EndpointResult{BaseURL: strings.TrimRight(st.BaseURL, "/"), Model: st.Model, APIKeyEnv: st.APIKeyEnv, KeySet: st.APIKey != "",
		NeedsKey: s.keys.needsKey(st.BaseURL, st.APIKey)}, nil
}
