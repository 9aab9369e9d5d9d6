#!/usr/bin/env bash
# Installs the language servers the Go tests run, pinned and cached here:
# gopls v0.23.0 (go install into bin/; the newest that builds with Go 1.26)
# and typescript-language-server 6.0.2 with typescript 5.9.3 (npm, into
# node_modules/). The tests skip without them unless CI=true. Idempotent
# and quiet.
set -euo pipefail
cd "$(dirname "$0")"
if ! bin/gopls version 2>/dev/null | grep -q 'gopls v0.23.0'; then
  GOBIN="$PWD/bin" go install golang.org/x/tools/gopls@v0.23.0
fi
if ! node_modules/.bin/typescript-language-server --version 2>/dev/null | grep -qx '6.0.2'; then
  npm ci --no-audit --no-fund --silent >/dev/null 2>&1 || npm install --no-audit --no-fund --silent >/dev/null
fi
