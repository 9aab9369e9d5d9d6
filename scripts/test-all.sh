#!/usr/bin/env bash
# Runs every test of the repository: Go (vet, race-enabled tests, short fuzz
# runs) and, once they exist, the editors' tests. This is the README's test
# command; .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -count=1 ./...
echo "== fuzz (short runs over the seed corpus and beyond)"
fuzz() { go test -run '^$' -fuzz "^$1\$" -fuzztime "${FUZZTIME:-10s}" "$2"; }
fuzz FuzzMessages ./agent/message/
fuzz FuzzResolve ./workspace/
fuzz FuzzStream ./server/
