package session

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/agent-lsp/agent-lsp/server/config"
)

// ReasonData says why a request cannot be served with the settings it has
// (the data of LSP's JSON-RPC error refused for a Reason, and of
// agent.endpoint's answer; ACP's error data): what the next runs would use.
type ReasonData struct {
	Reason    string   `json:"reason"`           // agent.Reason*: no-api-key, key-refused, model-unknown, endpoint-unreachable
	Setting   string   `json:"setting"`          // the setting that fixes it (initializationOptions' name)
	BaseURL   string   `json:"baseURL"`          // the endpoint
	Model     string   `json:"model"`            // the model runs would use
	APIKeyEnv string   `json:"apiKeyEnv"`        // the variable the key is read from
	Models    []string `json:"models,omitempty"` // model-unknown: the models the endpoint offers
}

// ReasonDataOf is the ReasonData of settings st for reason and the setting
// that fixes it.
func ReasonDataOf(st config.Settings, reason, setting string) ReasonData {
	return ReasonData{Reason: reason, Setting: setting, BaseURL: strings.TrimRight(st.BaseURL, "/"), Model: st.Model, APIKeyEnv: st.APIKeyEnv}
}

// NeedsKey reports whether baseURL is known to need an API key when key is
// empty: OpenAI's endpoint always does. (The LSP server also knows the
// endpoints that refused a request without one.)
func NeedsKey(baseURL, key string) bool { return key == "" && isOpenAI(baseURL) }

// isOpenAI reports whether baseURL is OpenAI's API, which always needs a key.
func isOpenAI(baseURL string) bool {
	u, err := url.Parse(baseURL)
	return err == nil && (u.Hostname() == "api.openai.com" || strings.HasSuffix(u.Hostname(), ".openai.com"))
}

// noKeyWords says why the endpoint is not asked: it needs a key none is set.
func noKeyWords(st config.Settings) string {
	return fmt.Sprintf("%s needs an API key and %s is not set", strings.TrimRight(st.BaseURL, "/"), st.APIKeyEnv)
}
