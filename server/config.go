package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agent-lsp/agent-lsp/store"
)

// Options are the server's settings from its command line; they win over
// initializationOptions, which win over the environment.
type Options struct {
	BaseURL    string
	Model      string
	StorePath  string
	MaxSteps   int
	Durability string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Logf writes a log line to stderr; nil discards.
	Logf func(format string, args ...any)
	// Exit is called when the parent process named in initialize dies; nil means os.Exit.
	Exit func(code int)
}

// initOptions is initializationOptions as the contract defines it.
type initOptions struct {
	Model struct {
		BaseURL   string `json:"baseURL"`
		Model     string `json:"model"`
		APIKeyEnv string `json:"apiKeyEnv"`
	} `json:"model"`
	Store struct {
		Path string `json:"path"`
	} `json:"store"`
	Edits       string `json:"edits"`
	Permissions struct {
		Allow []string `json:"allow"`
		Deny  []string `json:"deny"`
	} `json:"permissions"`
	MaxSteps   int    `json:"maxSteps"`
	Window     int    `json:"window"`
	Durability string `json:"durability"`
}

// settings is the resolved configuration.
type settings struct {
	baseURL, model, apiKey string
	storePath              string
	durability             store.Durability
	edits                  string
	allow, deny            []*regexp.Regexp
	maxSteps, window       int
}

const defaultModel = "gpt-4o-mini"

func (s *Server) resolve(raw json.RawMessage) (settings, error) {
	var io initOptions
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &io); err != nil {
			return settings{}, err
		}
	}
	env := s.opts.Getenv
	st := settings{baseURL: "https://api.openai.com/v1", model: defaultModel, edits: "apply", maxSteps: io.MaxSteps, window: io.Window}
	pick := func(dst *string, vals ...string) {
		for _, v := range vals {
			if v != "" {
				*dst = v
			}
		}
	}
	pick(&st.baseURL, env("OPENAI_BASE_URL"), io.Model.BaseURL, s.opts.BaseURL)
	pick(&st.model, env("AGENT_LSP_MODEL"), io.Model.Model, s.opts.Model)
	keyEnv := "OPENAI_API_KEY"
	pick(&keyEnv, io.Model.APIKeyEnv)
	st.apiKey = env(keyEnv)
	st.storePath = StorePath(env)
	pick(&st.storePath, io.Store.Path, s.opts.StorePath)
	pick(&st.edits, io.Edits)
	dur := ""
	pick(&dur, env("AGENT_LSP_DURABILITY"), io.Durability, s.opts.Durability)
	d, err := store.ParseDurability(dur)
	if err != nil {
		return settings{}, err
	}
	st.durability = d
	if s.opts.MaxSteps > 0 {
		st.maxSteps = s.opts.MaxSteps
	}
	for _, p := range io.Permissions.Allow {
		st.allow = append(st.allow, commandPattern(p))
	}
	for _, p := range io.Permissions.Deny {
		st.deny = append(st.deny, commandPattern(p))
	}
	return st, nil
}

// StorePath is the store file used when nothing configures one.
func StorePath(env func(string) string) string {
	if p := env("AGENT_LSP_STORE"); p != "" {
		return p
	}
	return defaultStorePath(env)
}

// defaultStorePath is $XDG_STATE_HOME/agent-lsp/sessions.db, else under ~/.local/state.
func defaultStorePath(env func(string) string) string {
	dir := env("XDG_STATE_HOME")
	if dir == "" {
		home := env("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "agent-lsp", "sessions.db")
}

// fallbackStorePath is used when another process holds the main store: one
// file per set of workspace folders, so a window reopened later finds its sessions.
func fallbackStorePath(main string, roots []string) string {
	h := sha256.Sum256([]byte(strings.Join(roots, "\x00")))
	ext := filepath.Ext(main)
	return strings.TrimSuffix(main, ext) + "." + hex.EncodeToString(h[:4]) + ext
}

// commandPattern compiles a permission pattern: * matches any text, the rest is literal.
func commandPattern(p string) *regexp.Regexp {
	parts := strings.Split(strings.TrimSpace(p), "*")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

func matchAny(pats []*regexp.Regexp, s string) bool {
	for _, p := range pats {
		if p.MatchString(s) {
			return true
		}
	}
	return false
}
