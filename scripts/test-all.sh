#!/usr/bin/env bash
# Runs every test of the repository: Go (vet, staticcheck, function length, race-enabled
# tests, short fuzz runs), the README's runnable commands (scripts/readme-check.sh), the Neovim
# plugin in headless Neovim, and the VS Code extension (unit, integration,
# packaging, and end to end in code-server), and a dry run of the release
# (scripts/release-check.sh). This is the README's
# test command; .ci/run calls exactly this. The editor tests install what they
# need (Debian's neovim and chromium, npm packages) on first use, and the
# store tests a PostgreSQL cluster (Debian's postgresql).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet ./...
echo "== Go linters (staticcheck, installed and cached when missing; function length)"
bash scripts/lint-go.sh
echo "== cross-builds and vet: windows, macOS, linux/arm64 (scripts/cross-check.sh)"
bash scripts/cross-check.sh
echo "== the reference MCP server the Go tests run (npm)"
bash testdata/mcp/everything/install.sh
echo "== a throwaway PostgreSQL cluster for the shared-store tests (Debian's postgresql, installed when missing)"
eval "$(bash scripts/postgres.sh)"
trap 'bash scripts/postgres.sh stop "$AGENT_LSP_TEST_POSTGRES_DIR"' EXIT
echo "== the language servers the Go tests run (gopls v0.23.0, typescript-language-server 6.0.2; pinned, cached in testdata/langserver)"
bash testdata/langserver/install.sh
echo "== ripgrep, which the search tests compare against (Debian's ripgrep, installed when missing)"
command -v rg >/dev/null || { apt-get update -qq && apt-get install -y -qq ripgrep >/dev/null; }
echo "== go test -race"
go test -race -count=1 -timeout 30m ./...
echo "== ACP end to end with the official TypeScript client"
bash testdata/acp/node/run.sh
echo "== fuzz (short runs over the seed corpus and beyond)"
# Minimizing is capped: with long string inputs it otherwise runs for minutes
# (the fuzzer reports 0 execs/s meanwhile).
# The runs are counted in inputs, not seconds: with a duration, a worker still
# busy when the time is up sometimes fails the run with "context deadline
# exceeded" on a loaded machine (seen in CI-like runs here), a flake of the
# fuzzing engine, not of our code.
fuzz() { go test -run '^$' -fuzz "^$1\$" -fuzztime "${FUZZTIME:-30000x}" -fuzzminimizetime 100x "$2"; }
fuzz FuzzMessages ./agent/message/
fuzz FuzzResolve ./workspace/
fuzz FuzzBelow ./workspace/
fuzz FuzzStream ./server/
fuzz FuzzDecide ./agent/shellrule/
fuzz FuzzLineMatcher ./agent/tools/
fuzz FuzzListOps ./store/
echo "== the README: at most 250 lines, its runnable commands against the scripted model"
bash scripts/readme-check.sh
echo "== Lua linters: stylua and luacheck (scripts/lint-lua.sh; installed and cached when missing)"
bash scripts/lint-lua.sh
echo "== neovim plugin (headless end to end)"
bash editors/neovim/tests/run.sh
echo "== vscode extension (eslint and prettier, unit, integration, package, code-server end to end)"
bash editors/vscode/scripts/test.sh --e2e
echo "== release: scripts/release.sh --dry-run --platform linux-x64, its artifacts checked (scripts/release-check.sh)"
bash scripts/release-check.sh
