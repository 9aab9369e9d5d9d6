#!/usr/bin/env bash
# Lints the Neovim plugin and its tests: stylua 2.5.2 checks the formatting
# (editors/neovim/.stylua.toml; `bash scripts/lint-lua.sh --fix` rewrites
# the files instead), luacheck the code (editors/neovim/.luacheckrc).
# stylua comes from npm (@johnnymorganz/stylua-bin, which ships the binary)
# into a per-version cache folder on first use; luacheck is Debian's
# lua-check, installed when missing.
set -euo pipefail
cd "$(dirname "$0")/../editors/neovim"

version=2.5.2
cache="${XDG_CACHE_HOME:-$HOME/.cache}/agent-lsp/tools/stylua-$version"
stylua="$cache/node_modules/.bin/stylua"
if ! "$stylua" --version 2>/dev/null | grep -qx "stylua $version"; then
	echo "installing stylua $version into $cache" >&2
	mkdir -p "$cache"
	npm install --prefix "$cache" --no-audit --no-fund --no-save --loglevel=error "@johnnymorganz/stylua-bin@$version" >/dev/null
fi
if ! command -v luacheck >/dev/null; then
	echo "installing Debian's lua-check (luacheck)" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lua-check >/dev/null
fi

if [[ "${1:-}" == "--fix" ]]; then
	# Twice: on some long tables stylua 2.5.2 reaches its fixed point only
	# on the second run (tests/unit.lua's mcp_fixture did).
	"$stylua" lua plugin tests && "$stylua" lua plugin tests
else
	echo "== stylua $version --check" >&2
	"$stylua" --check lua plugin tests
fi
echo "== $(luacheck --version | head -n1)" >&2
luacheck --formatter plain --no-color lua plugin tests
