#!/usr/bin/env bash
# Tests of the Neovim plugin: unit tests without a server (unit.lua: the
# version shims of compat.lua, the initializationOptions and their checks,
# the review's hint, the renderers' text, the event log, the commands against
# a stubbed connection, the version check of edits, saving before commands,
# the review by hunk; per-session commands routed to the session's client;
# the chat's helpers, #references, :AgentModel, :AgentMcp and the MCP options, the
# statusline's tokens, the health check's reporters and setting checks, the
# project roots), the contract (protocol.lua: testdata/protocol read
# with types.lua and rendered with the plugin's renderers, the server's
# requests answered by the plugin's handlers; the settings table of
# docs/protocol.md), then end-to-end tests
# (e2e.lua) where headless Neovim drives the real agent-lsp binary against the
# scripted model (a test double that replays testdata/scripts/editors.json;
# e2e.lua starts a second one with a script of its own for a subagent; the
# MCP test server, built below, serves mcp_servers), rewind.lua (:AgentRewind,
# :AgentFork and :AgentRetry against a scripted model of its own), and
# the install recipe of README.md loaded the way lazy.nvim loads it (lazy.lua).
# Installs Debian's neovim when it is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
# The sandbox gives each project a Go build cache of its own, cold for each
# test's new project: the tests share one, warm after the first run.
export AGENT_LSP_SANDBOX_GOCACHE="${AGENT_LSP_SANDBOX_GOCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-lsp-test-sandbox-go-build}"

if ! command -v nvim >/dev/null; then
	echo "neovim tests: installing Debian's neovim" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null
fi
echo "neovim tests: $(nvim --version | head -n1)" >&2

timeout 60 nvim --headless -u NONE -i NONE -n --cmd "set rtp^=$repo/editors/neovim" \
	-c "luafile $here/unit.lua"
timeout 60 nvim --headless -u NONE -i NONE -n --cmd "set rtp^=$repo/editors/neovim" \
	-c "luafile $here/protocol.lua"

gocache="$(go env GOCACHE)" # the agent's go test and the lazy.nvim recipe's build use it (XDG_CACHE_HOME changes below)
work="$(mktemp -d)"
trap 'kill "${model_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
bash "$repo/testdata/langserver/install.sh" # gopls, which e2e.lua attaches through vim.lsp.start_client
(cd "$repo" && go build -o "$work/bin/agent-lsp" ./cmd/agent-lsp && go build -o "$work/bin/scripted-model" ./cmd/scripted-model &&
	go build -o "$work/bin/mcp-testserver" ./testdata/mcp/testserver)
cp -r "$repo/testdata/workspaces/sample" "$work/sample"
cp -r "$repo/editors/neovim" "$work/plugin" # :helptags writes into it
rm -f "$work/plugin/doc/tags"                # e2e.lua checks that :checkhealth reports them missing
(cd "$work/sample" && git init -q)

"$work/bin/scripted-model" --script "$repo/testdata/scripts/editors.json" >"$work/model-url" &
model_pid=$!
for _ in $(seq 100); do [[ -s "$work/model-url" ]] && break; sleep 0.1; done

export OPENAI_BASE_URL="$(head -n1 "$work/model-url")" OPENAI_API_KEY=demo-not-a-secret AGENT_LSP_MODEL=scripted
export AGENT_LSP_DAEMON_IDLE=3s # the servers' daemon exits soon after the tests
export AGENT_LSP_TEST_PLUGIN="$work/plugin" AGENT_LSP_TEST_BIN="$work/bin/agent-lsp" AGENT_LSP_TEST_WS="$work/sample" AGENT_LSP_TEST_STORE="$work/sessions.db"
export AGENT_LSP_TEST_MODEL_BIN="$work/bin/scripted-model" # e2e.lua starts a second one with its own script
export AGENT_LSP_TEST_MCP_BIN="$work/bin/mcp-testserver"    # a stdio MCP server (echo, peek, fail, slow, crash, env, cwd, add_tool, image)
export AGENT_LSP_TEST_GOPLS="$repo/testdata/langserver/bin/gopls"
# An edit's wait for gopls's diagnostics ends when they come; the default bound (1.5 s) can run out
# on a loaded machine, which the result would report as no errors yet.
export AGENT_LSP_DIAGNOSTICS_WAIT=20000
export XDG_STATE_HOME="$work/state" XDG_CACHE_HOME="$work/cache" XDG_DATA_HOME="$work/data"
export GOCACHE="$gocache"
# The install recipe: a copy of the repository's sources for the build of
# README.md's lazy.nvim spec (lazy.lua runs it), without a built binary.
lazy="$work/lazy/agent-lsp"
mkdir -p "$lazy/editors"
(cd "$repo" && cp -r go.mod go.sum agent cmd server store workspace "$lazy/")
cp -r "$repo/editors/neovim" "$lazy/editors/neovim"
rm -rf "$lazy/editors/neovim/bin" "$lazy/editors/neovim/doc/tags"
cd "$work/sample"
timeout 300 nvim --headless -u NONE -i NONE -n --cmd "set rtp^=$work/plugin" \
	-c "luafile $here/e2e.lua"
# Rewind (rewind.lua): :AgentRewind, :AgentFork and :AgentRetry, with a scripted model and a workspace of its own.
timeout 300 nvim --headless -u NONE -i NONE -n --cmd "set rtp^=$work/plugin" \
	-c "luafile $here/rewind.lua"
AGENT_LSP_TEST_LAZY_DIR="$lazy" timeout 300 nvim --headless -u NONE -i NONE -n -c "luafile $here/lazy.lua"
