#!/usr/bin/env bash
# The main job, end to end: build agent-lsp, start the scripted model (a test
# double that replays testdata/scripts/demo.json; it is not a model), and run
# the agent headless on a copy of testdata/workspaces/sample. The agent reads
# the project, edits greet.go and runs the project's tests; look at the result
# in .demo/sample/greet.go afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin .demo
go build -o bin/agent-lsp ./cmd/agent-lsp
go build -o bin/scripted-model ./cmd/scripted-model
rm -rf .demo/sample && cp -r testdata/workspaces/sample .demo/sample

bin/scripted-model --script testdata/scripts/demo.json > .demo/model-url &
model_pid=$!
trap 'kill $model_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s .demo/model-url ] && break; sleep 0.1; done

OPENAI_BASE_URL="$(head -n1 .demo/model-url)" OPENAI_API_KEY=demo-not-a-secret AGENT_LSP_MODEL=scripted \
  bin/agent-lsp run --workspace .demo/sample --store .demo/sessions.db \
  "Add a Farewell function next to Greet and run the tests"

echo
echo "== .demo/sample/greet.go after the run:"
cat .demo/sample/greet.go
echo
echo "== stored sessions:"
bin/agent-lsp sessions --store .demo/sessions.db
