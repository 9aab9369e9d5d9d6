#!/usr/bin/env bash
# Installs @modelcontextprotocol/server-everything (the reference MCP server)
# for the Go tests that run it (server/mcp_test.go); they skip without it
# unless CI=true.
set -euo pipefail
cd "$(dirname "$0")"
[[ -x node_modules/.bin/mcp-server-everything ]] && exit 0
npm install --no-audit --no-fund --silent >/dev/null
