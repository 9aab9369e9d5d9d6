#!/usr/bin/env bash
# Cross-builds the module for every platform agent-lsp ships on and vets
# each platform's files (its build-tagged code and tests), with the one
# build cache the rest of the test command uses. Nothing here runs a
# binary: Linux amd64 runs the tests; the others are checked to build.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(windows/amd64 windows/arm64 darwin/arm64 darwin/amd64 linux/arm64)
for t in "${targets[@]}"; do
	echo "-- $t"
	GOOS=${t%/*} GOARCH=${t#*/} CGO_ENABLED=0 go build ./...
	GOOS=${t%/*} GOARCH=${t#*/} CGO_ENABLED=0 go vet ./...
done
