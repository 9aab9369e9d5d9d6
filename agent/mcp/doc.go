// Package mcp runs the user's Model Context Protocol servers and offers their
// tools to the model. The protocol is the official Go SDK's
// (github.com/modelcontextprotocol/go-sdk), over stdio and streamable HTTP.
//
//   - config.go reads definitions in the {"mcpServers": {NAME: {...}}} shape
//     of Claude Code's .mcp.json (Parse, ParseServers), expands ${VAR} only
//     for sources other than a project, combines sources (Merge) and
//     identifies what a definition runs (Definition.Hash) for approvals.
//   - manager.go, server.go and transport.go run the servers (Manager): lazily,
//     with an explicit environment, restarted after a crash with backoff, with
//     a timeout per call, cancelled with the caller's context.
//   - tools.go is the model's view: names mcp__<server>__<tool> as OpenAI
//     accepts them (AssignNames), capped descriptions, object input schemas
//     (ModelTools), and results as text cut to a limit (ResultText).
//
// What starts a server (approvals of a project's definitions, the sandbox
// through Options.Prepare) and what may call a tool (permissions) is the
// caller's: this package runs what it is given.
package mcp
