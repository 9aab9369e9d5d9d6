#!/usr/bin/env bash
# End to end test of `agent-lsp acp` with the official TypeScript ACP client
# (@agentclientprotocol/sdk, pinned in package.json): a second, independent
# implementation of the protocol drives a prompt with tool calls (read, edit
# written through the client, a command that asks for permission) against the
# scripted model, then loads the session in a new process. test.mjs has the
# steps and checks. Run from anywhere: bash testdata/acp/node/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"

# The npm dependencies, as package-lock.json pins them.
want="$(cd "$here" && node -p 'require("./package.json").devDependencies["@agentclientprotocol/sdk"]')"
have="$(cd "$here" && node -p 'try { require("./node_modules/@agentclientprotocol/sdk/package.json").version } catch { "" }')"
if [[ "$have" != "$want" ]]; then
	echo "installing @agentclientprotocol/sdk@$want (npm ci)" >&2
	(cd "$here" && npm ci --no-audit --no-fund --silent >/dev/null)
fi

tmp="$(mktemp -d)"
model_pid=""
cleanup() {
	if [[ -n "$model_pid" ]]; then
		kill "$model_pid" 2>/dev/null || true
		wait "$model_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "building agent-lsp and scripted-model" >&2
(cd "$root" && go build -o "$tmp/agent-lsp" ./cmd/agent-lsp && go build -o "$tmp/scripted-model" ./cmd/scripted-model)

# The model's answers, in order: read greet.go, edit it, run a command (which
# asks for permission), then the reply. The tool call IDs are what test.mjs
# looks for.
cat >"$tmp/script.json" <<'EOF'
{
  "turns": [
    {"text": "Reading greet.go.", "toolCalls": [
      {"id": "call_read", "name": "read_file", "args": {"path": "greet.go"}}
    ]},
    {"text": "Changing the greeting.", "toolCalls": [
      {"id": "call_edit", "name": "edit_file", "args": {"path": "greet.go", "old_text": "Hello, ", "new_text": "Hi, "}}
    ]},
    {"toolCalls": [
      {"id": "call_grep", "name": "run_command", "args": {"command": "grep -c Hi greet.go"}}
    ]},
    {"text": "Done over ACP."}
  ]
}
EOF

"$tmp/scripted-model" --script "$tmp/script.json" >"$tmp/model.out" 2>"$tmp/model.err" &
model_pid=$!
model_url=""
for _ in $(seq 600); do # up to 60 s for its first line, the base URL
	model_url="$(head -n1 "$tmp/model.out" 2>/dev/null || true)"
	[[ -n "$model_url" ]] && break
	if ! kill -0 "$model_pid" 2>/dev/null; then
		echo "scripted-model exited:" >&2
		cat "$tmp/model.err" >&2
		exit 1
	fi
	sleep 0.1
done
if [[ -z "$model_url" ]]; then
	echo "scripted-model printed no URL within 60 s:" >&2
	cat "$tmp/model.err" >&2
	exit 1
fi
echo "scripted model at $model_url" >&2

cp -R "$root/testdata/workspaces/sample" "$tmp/sample"
mkdir -p "$tmp/state"

ACP_AGENT_LSP="$tmp/agent-lsp" \
	ACP_MODEL_URL="$model_url" \
	ACP_WORKSPACE="$tmp/sample" \
	ACP_STORE="$tmp/state/store.db" \
	ACP_CONFIG_HOME="$tmp/config" \
	node "$here/test.mjs"
