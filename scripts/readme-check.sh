#!/usr/bin/env bash
# Checks README.md the way a new user reads it: it must fit in 250 lines, the
# files it links to must exist, and every fenced block marked runnable (a line
# `<!-- runnable -->` right before the fence) must succeed. The marked blocks run in order, in one bash with
# `set -euo pipefail`, starting in the repository's root (later blocks see
# the folder and the variables earlier ones left, as a user following the page
# would), in a temporary HOME whose default session store is temporary too,
# against the scripted model (testdata/scripts/readme.json: the "set a key"
# step is this environment's OPENAI_BASE_URL/OPENAI_API_KEY), with nothing
# reaching the network: the model is a loopback listener, GOPROXY is off (the
# Go modules are downloaded before, with the caller's settings) and the
# agent's commands run in its sandbox. Installs that need the network or a
# real key are not marked. test-all.sh runs this.
#   bash scripts/readme-check.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
readme="$repo/README.md"
max_lines=250

lines=$(wc -l <"$readme")
if ((lines > max_lines)); then
	echo "readme-check: README.md has $lines lines, more than $max_lines: move detail to docs/" >&2
	exit 1
fi

# Every file the README links to exists (docs/ pages move and get renamed).
broken=0
while read -r link; do
	path="${link%%#*}"
	[[ -z "$path" || "$path" =~ ^[a-z]+: ]] && continue
	[[ -e "$repo/$path" ]] || { echo "readme-check: README.md links to $path, which does not exist" >&2; broken=1; }
done < <(grep -o '](\([^)]*\))' "$readme" | sed 's/^](//; s/)$//')
((broken == 0)) || exit 1

work="$(mktemp -d)"
model_pid=""
cleanup() {
	[[ -z "$model_pid" ]] || kill "$model_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# The blocks: each marker must be followed by a fence; the script gets a
# line that names the block's place before the block's text.
awk -v out="$work/blocks.sh" '
	function fail(msg) { print "readme-check: README.md:" NR ": " msg > "/dev/stderr"; bad = 1; exit 1 }
	marked && !/^```(sh|bash|shell)$/ { fail("<!-- runnable --> must be followed by a ```sh fence") }
	marked { marked = 0; inblock = 1; n++; print "readme_block=" NR >> out; print "echo \"readme-check: README.md:" NR "\" >&2" >> out; next }
	inblock && /^```$/ { inblock = 0; next }
	inblock { print >> out; next }
	/^<!-- runnable -->$/ { marked = 1 }
	END { if (!bad && inblock) fail("a runnable block is not closed"); if (!bad && n == 0) fail("no block is marked <!-- runnable -->"); if (!bad) print n > "/dev/stderr" }
' "$readme" 2>"$work/count" || { cat "$work/count" >&2; exit 1; }
echo "readme-check: README.md has $lines lines (at most $max_lines) and $(cat "$work/count") runnable blocks" >&2

# Everything the blocks need that comes from the network, fetched now.
(cd "$repo" && go mod download && go build -o "$work/bin/scripted-model" ./cmd/scripted-model)
"$work/bin/scripted-model" --script "$repo/testdata/scripts/readme.json" >"$work/model-url" &
model_pid=$!
for _ in $(seq 100); do [[ -s "$work/model-url" ]] && break; sleep 0.1; done
[[ -s "$work/model-url" ]] || { echo "readme-check: the scripted model did not start" >&2; exit 1; }

mkdir -p "$work/home" "$work/gobin"
{
	echo 'set -euo pipefail'
	echo 'trap '\''echo "readme-check: the block at README.md:$readme_block failed (exit $?)" >&2'\'' ERR'
	echo "cd $(printf %q "$repo")"
	cat "$work/blocks.sh"
} >"$work/run.sh"

# A user's environment: a fresh HOME (so the default store, XDG folders and
# ~/sample are temporary), the Go caches of the caller (a clean cache would
# rebuild the standard library for the agent's go test), go install into a
# folder on PATH, and the scripted model as the configured endpoint.
env -i \
	PATH="$work/gobin:$PATH" HOME="$work/home" USER="${USER:-root}" LANG=C.UTF-8 TERM=dumb TMPDIR="${TMPDIR:-/tmp}" \
	GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)" GOBIN="$work/gobin" GOPROXY=off GOTOOLCHAIN=local GOFLAGS="$(go env GOFLAGS)" \
	OPENAI_BASE_URL="$(head -n1 "$work/model-url")" OPENAI_API_KEY=demo-not-a-secret AGENT_LSP_MODEL=scripted \
	AGENT_LSP_DAEMON_IDLE=2s \
	timeout 900 bash "$work/run.sh"
echo "readme-check: every runnable block of README.md succeeded" >&2
