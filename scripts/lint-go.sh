#!/usr/bin/env bash
# Lints the Go module with staticcheck (its default checks) and checks that
# no function of server, agent, store or workspace (tests included) is over
# 80 lines (scripts/funclen). staticcheck is installed from the Go module
# proxy into a per-version cache folder on first use, so a clean clone needs
# nothing but Go.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v0.8.2
bin="${XDG_CACHE_HOME:-$HOME/.cache}/agent-lsp/tools/staticcheck-$version"
if [ ! -x "$bin/staticcheck" ]; then
	echo "installing staticcheck $version into $bin"
	mkdir -p "$bin"
	GOBIN="$bin" go install "honnef.co/go/tools/cmd/staticcheck@$version"
fi
echo "== staticcheck $version"
"$bin/staticcheck" ./...
echo "== function length (at most 80 lines in server, agent, store, workspace)"
go run ./scripts/funclen server agent store workspace
