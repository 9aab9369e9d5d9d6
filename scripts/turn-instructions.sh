#!/usr/bin/env bash
# Counts the instructions agent-lsp executes per tool turn (valgrind's
# callgrind, user space only), for BINARY... (default: a build of this tree):
# BenchmarkTurnOverhead's 50-turn run in-process, once with 1 run and once
# with 6, and the difference over the 5 runs' 255 turns. Unlike the time per
# turn, the count repeats to about 1% on a loaded machine, so two builds
# compare in any hour; system calls and waits are not in it.
#   bash scripts/turn-instructions.sh                 # this tree
#   bash scripts/turn-instructions.sh /tmp/a /tmp/b   # two builds, side by side
set -euo pipefail
bins=()
for bin in "$@"; do bins+=("$(realpath "$bin")"); done # as named from the caller's folder
set -- "${bins[@]}"
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ $# -eq 0 ]; then
  go build -o "$work/agent-lsp" ./cmd/agent-lsp
  set -- "$work/agent-lsp"
fi
for bin in "$@"; do
  out="$work/out"
  rm -rf "$out" && mkdir -p "$out"
  # Go's async preemption signals trip callgrind's signal handling.
  cat >"$work/wrap" <<WRAP
#!/bin/sh
GODEBUG=asyncpreemptoff=1 exec valgrind --tool=callgrind --callgrind-out-file=$out/cg.%p "$bin" "\$@" 2>>$out/valgrind.log
WRAP
  chmod +x "$work/wrap"
  (cd cmd/agent-lsp && AGENT_LSP_BENCH_BINARY="$work/wrap" go test -run '^$' -bench 'TurnOverhead/in-process/turns=50$' -benchtime 6x -count 1 . >"$out/bench.txt" 2>&1) ||
    { cat "$out/bench.txt"; exit 1; }
  totals=$(for f in "$out"/cg.*; do grep -h '^summary:\|^totals:' "$f" | head -1 | awk '{print $2}'; done | sort -n)
  small=$(echo "$totals" | head -1) big=$(echo "$totals" | tail -1)
  echo "$bin: $(( (big - small) / (5 * 51) )) instructions per tool turn"
done
