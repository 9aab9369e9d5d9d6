#!/usr/bin/env bash
# Times what agent-lsp adds to a tool turn beyond the model call
# (BenchmarkTurnOverhead's 50-turn runs, through the binary) for BINARY...
# (default: a build of this tree), in-process and through the daemon,
# interleaved: ROUNDS rounds (default 8), each one run of every binary in
# every mode, so that all of them see the same spells of the host's load.
# Prints each run (the figure, the CPU a turn cost, the host's steal) and then,
# per binary and mode, the figure's range and median over all runs and over
# the runs under 1% steal: on a shared virtual machine the figure moves by up
# to 2x with the host (docs/performance.md).
#   bash scripts/turn-overhead.sh                      # this tree
#   ROUNDS=4 bash scripts/turn-overhead.sh /tmp/a /tmp/b  # two builds
set -euo pipefail
bins=()
for bin in "$@"; do bins+=("$(realpath "$bin")"); done # as named from the caller's folder
set -- "${bins[@]}"
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ $# -eq 0 ]; then
  go build -o "$work/this-tree" ./cmd/agent-lsp
  set -- "$work/this-tree"
fi
go test -c -o "$work/bench" ./cmd/agent-lsp
runs="$work/runs"
: >"$runs"
printf '%-20s %-10s %10s %10s %8s\n' binary mode beyond-ms cpu-ms steal-%
for ((r = 1; r <= rounds; r++)); do
  for bin in "$@"; do
    for mode in in-process daemon; do
      # The test binary runs in its package's folder, as go test runs it.
      out=$(cd cmd/agent-lsp && AGENT_LSP_BENCH_BINARY="$bin" "$work/bench" \
        -test.run '^$' -test.bench "^BenchmarkTurnOverhead\$/^$mode\$/^turns=50\$" -test.benchtime 60x 2>&1) ||
        { echo "$out"; exit 1; }
      # The metrics by their units, wherever the benchmark puts them.
      line=$(echo "$out" | awk -v bin="${bin#"$work"/}" -v mode="$mode" '/^BenchmarkTurnOverhead/ {
        for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
        printf "%s %s %.3f %.3f %.2f\n", bin, mode, m["beyond-model-ns/turn"] / 1e6, m["server-cpu-ns/turn"] / 1e6, m["steal-%"]
      }')
      [ -n "$line" ] || { echo "$out"; exit 1; }
      echo "$line" >>"$runs"
      echo "$line" | awk '{ printf "%-20s %-10s %10s %10s %8s\n", $1, $2, $3, $4, $5 }'
    done
  done
done
echo
echo "per binary and mode: the figure (ms beyond the model per turn), all runs and runs under 1% steal"
for bin in "$@"; do
  for mode in in-process daemon; do
    for quiet in all quiet; do
      awk -v bin="${bin#"$work"/}" -v mode="$mode" -v quiet="$quiet" \
        '$1 == bin && $2 == mode && (quiet == "all" || $5 < 1) { print $3 }' "$runs" | sort -n |
        awk -v label="${bin#"$work"/} $mode ($quiet)" '{ v[NR] = $1 }
          END {
            if (NR == 0) { printf "%-36s no runs\n", label; exit }
            med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%-36s %d runs, %.3f-%.3f, median %.3f\n", label, NR, v[1], v[NR], med
          }'
    done
  done
done
