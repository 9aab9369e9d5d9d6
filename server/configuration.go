package server

import (
	"encoding/json"

	"go.lsp.dev/protocol"

	"github.com/agent-lsp/agent-lsp/server/config"
)

// settingsSections are the keys under which clients nest the settings in
// workspace/didChangeConfiguration (VS Code sends its configuration section).
var settingsSections = []string{"agentLsp", "agent-lsp", "agent_lsp"}

// didChangeConfiguration applies new settings, given in the shape of
// initializationOptions (or nested under a section key), to the runs that
// start from now on; runs in progress keep theirs.
func (s *Server) didChangeConfiguration(b *Backend, params json.RawMessage) error {
	p, err := decode[protocol.DidChangeConfigurationParams]("workspace/didChangeConfiguration", params)
	if err != nil {
		return err
	}
	raw := json.RawMessage(p.Settings)
	var nested map[string]json.RawMessage
	if json.Unmarshal(raw, &nested) == nil {
		for _, k := range settingsSections {
			if v, ok := nested[k]; ok {
				raw = v
			}
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil // a bare change signal: the settings a client sends with it are what the server reads
	}
	st, warnings, err := config.Resolve(s.opts.Getenv, raw, s.opts.Flags)
	if err != nil {
		s.act("settings not applied: " + err.Error())
		return nil
	}
	nb, notices, err := b.Reconfigure(st)
	if err != nil {
		s.act("settings not applied: " + err.Error())
		return nil
	}
	if !s.life.replace(nb) {
		return nil
	}
	nb.Adopted(b)
	for _, n := range append(warnings, notices...) {
		s.notice(msgWarning, "%s", n)
	}
	s.logf("settings changed: model %s at %s, edits %s; runs from now on use them", st.Model, st.BaseURL, st.Edits)
	return nil
}
