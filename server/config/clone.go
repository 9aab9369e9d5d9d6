package config

import (
	"maps"
	"slices"
)

// Clone returns a copy of s that shares no memory with it: its lists, maps
// and raw JSON are copied too. Settings are an immutable value once
// resolved: whoever derives changed settings (a reconfiguration, an ACP
// session's MCP servers) changes a clone, never a value a backend holds.
// TestCloneSharesNothing fails when a field of a reference kind is added
// and not copied here.
func (s Settings) Clone() Settings {
	c := s
	c.Allow = slices.Clone(s.Allow)
	c.Deny = slices.Clone(s.Deny)
	c.AllowEdit = slices.Clone(s.AllowEdit)
	c.ScrubEnv = slices.Clone(s.ScrubEnv)
	c.SandboxNetwork = slices.Clone(s.SandboxNetwork)
	c.SandboxWritable = slices.Clone(s.SandboxWritable)
	c.SubagentModel = slices.Clone(s.SubagentModel)
	c.Prices = maps.Clone(s.Prices)
	c.MCPServers = slices.Clone(s.MCPServers)
	c.MCPConfig = slices.Clone(s.MCPConfig)
	c.AllowMCP = slices.Clone(s.AllowMCP)
	c.AllowFetch = slices.Clone(s.AllowFetch)
	c.MCPUnsandboxed = slices.Clone(s.MCPUnsandboxed)
	c.Hooks = slices.Clone(s.Hooks)
	c.AllowHooks = slices.Clone(s.AllowHooks)
	c.LanguageServers = slices.Clone(s.LanguageServers)
	return c
}
