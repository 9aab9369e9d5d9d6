#!/usr/bin/env bash
# Tests of the VS Code extension: type check, lint (eslint, prettier), unit tests (vscode stubbed), the
# integration test against the real binary and the scripted model, and the
# offline .vsix package, and the platform .vsix with the server binary (its
# progress lines with their times, and the bundled server's version, which is
# VERSION's). With --e2e it also runs the code-server end-to-end test.
set -euo pipefail
ext="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$ext/../.." && pwd)"
# The sandbox gives each project a Go build cache of its own, cold for each
# test's new project: the tests share one, warm after the first run.
export AGENT_LSP_SANDBOX_GOCACHE="${AGENT_LSP_SANDBOX_GOCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-lsp-test-sandbox-go-build}"
cd "$ext"

if [[ ! -d node_modules/vscode-languageclient || package-lock.json -nt node_modules/.package-lock.json ]]; then
	echo "vscode: npm ci" >&2
	npm ci --no-audit --no-fund --loglevel=error
fi

work="$(mktemp -d)"
trap 'kill "${model_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$repo" && go build -o "$work/agent-lsp" ./cmd/agent-lsp && go build -o "$work/scripted-model" ./cmd/scripted-model)
node scripts/script.mjs "$work/script.json"
"$work/scripted-model" --script "$work/script.json" >"$work/model-url" &
model_pid=$!
for _ in $(seq 100); do [[ -s "$work/model-url" ]] && break; sleep 0.1; done

echo "vscode: typecheck, with the protocol fixtures as typed modules" >&2
node scripts/fixtures.mjs
npx --no-install tsc --noEmit -p .
echo "vscode: lint: eslint (typescript-eslint strict, type-checked) and prettier (npm run lint)" >&2
npm run --silent lint
echo "vscode: unit and integration tests" >&2
node esbuild.mjs --tests
# The servers' daemons exit soon after the tests; a test that names no store
# never touches the user's.
AGENT_LSP_DAEMON_IDLE=3s AGENT_LSP_STORE="$work/default.db" \
	AGENT_LSP_BIN="$work/agent-lsp" AGENT_LSP_MODEL_URL="$(head -n1 "$work/model-url")" AGENT_LSP_SAMPLE="$repo/testdata/workspaces/sample" \
	node --test --test-reporter=spec out/test/
echo "vscode: package" >&2
npm run --silent package >/dev/null
ls -l dist/agent-lsp.vsix >&2
echo "vscode: platform package carrying the server binary" >&2
npm run --silent package:platform 2>&1 >/dev/null | tee "$work/package.log" >&2
for n in 1 2 3; do # each step says when it is done, and how long it took
	grep -qE "^package:platform \[$n/3\] .*: done in [0-9.]+ s$" "$work/package.log" || { echo "vscode: package:platform did not report step $n/3 done" >&2; exit 1; }
done
platform_vsix="dist/agent-lsp-$(node -p 'process.platform + "-" + process.arch').vsix"
unzip -Z "$platform_vsix" | grep -E '^-rwx.* extension/bin/agent-lsp$' >&2 || { echo "vscode: $platform_vsix lacks an executable bin/agent-lsp" >&2; exit 1; }
unzip -p "$platform_vsix" extension/bin/agent-lsp >"$work/bundled" && chmod +x "$work/bundled"
bundled_version="$("$work/bundled" --version)"
[[ "$bundled_version" == "agent-lsp $(cat "$repo/VERSION") ("* ]] || { echo "vscode: the bundled server says \"$bundled_version\", not VERSION $(cat "$repo/VERSION")" >&2; exit 1; }
[[ ! -e bin ]] || { echo "vscode: bin/ left behind" >&2; exit 1; }

if [[ "${1:-}" == "--e2e" ]]; then
	bash "$ext/e2e/run.sh"
fi
