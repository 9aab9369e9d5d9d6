#!/usr/bin/env bash
# Runs the Windows build's unit tests under Wine (Debian's wine64 8.0), by
# hand: not part of the test command (Wine is ~650 MB and is not Windows).
# Usage: scripts/wine-test.sh [packages...]   (default: every package)
#
# Wine 8.0 lacks two things the Go 1.26 runtime uses:
#  - bcryptprimitives.dll (ProcessPrng, loaded at start since Go 1.22):
#    scripts/wine/bcryptprimitives.c is a stand-in built with mingw-w64,
#    put in the script's own Wine prefix (~/.cache/agent-lsp/wine);
#  - POSIX-semantics deletes (FILE_DISPOSITION_INFORMATION_EX): os.RemoveAll
#    fails with "Invalid function", so every t.TempDir cleanup fails. A test
#    whose only failures are those cleanups is counted as passed here.
# Symbolic links are not created by Wine 8.0 either (os.Symlink fails or
# leaves nothing): tests that build symlinked trees fail for that reason.
# The summary lists each failed test with its first messages.
set -euo pipefail
cd "$(dirname "$0")/.."

wine=/usr/lib/wine/wine64
if [[ ! -x $wine ]] || ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
	[[ $(id -u) == 0 ]] || { echo "wine-test: needs wine64 and gcc-mingw-w64-x86-64-win32 (apt-get install, as root)" >&2; exit 2; }
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wine64 gcc-mingw-w64-x86-64-win32 >/dev/null
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/agent-lsp/wine"
prefix="$cache/prefix"
mkdir -p "$cache"
export WINEDEBUG=-all WINEPREFIX="$prefix" WINEDLLOVERRIDES="bcryptprimitives=n"
if [[ ! -f $prefix/drive_c/windows/system32/bcryptprimitives.dll ]]; then
	echo "wine-test: creating the Wine prefix (about a minute)" >&2
	"$wine" cmd /c exit >/dev/null 2>&1 || true
	x86_64-w64-mingw32-gcc -shared -O2 -Wl,--kill-at -o "$prefix/drive_c/windows/system32/bcryptprimitives.dll" scripts/wine/bcryptprimitives.c
fi
printf '#!/bin/sh\nexec %s "$@"\n' "$wine" >"$cache/exec" && chmod +x "$cache/exec"

pkgs=("$@")
[[ ${#pkgs[@]} -gt 0 ]] || mapfile -t pkgs < <(GOOS=windows go list ./...)
out="$(mktemp "$cache/test.XXXXXX.json")" # a run of its own: several may run at once
trap 'rm -f "$out"' EXIT
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go test -exec "$cache/exec" -count=1 -json -timeout 20m "${pkgs[@]}" >"$out" 2>&1 || true
python3 - "$out" <<'PY'
import json, sys, collections
out = collections.defaultdict(list)
result, noise = {}, "TempDir RemoveAll cleanup"
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    key = (e.get("Package", ""), e.get("Test"))
    if e.get("Action") == "output":
        out[key].append(e["Output"].rstrip("\n"))
    elif e.get("Action") in ("pass", "fail", "skip"):
        result[key] = e["Action"]
def real(key):
    msgs = [l.strip() for l in out[key] if l.strip() and not l.strip().startswith(("=== ", "--- ", "FAIL", "PASS", "ok "))]
    return [m for m in msgs if noise not in m]
tests = {k: v for k, v in result.items() if k[1]}
def subs(k):
    return [s for s in tests if s[0] == k[0] and s[1].startswith(k[1] + "/") and tests[s] == "fail" and real(s)]
failed = sorted(k for k, v in tests.items() if v == "fail" and "/" not in k[1] and (real(k) or subs(k)))
passed = sum(1 for k, v in tests.items() if "/" not in k[1] and k not in failed and v != "skip")
pkgs = sorted({k[0] for k in result})
broken = [k[0] for k, v in result.items() if not k[1] and v == "fail" and not any(t[0] == k[0] for t in tests)]
print(f"wine-test: {len(pkgs)} packages, {passed} tests passed (cleanup-only failures counted as passed), {len(failed)} failed")
for p in broken:
    print(f"  {p}: no test ran: " + " | ".join(out[(p, None)][-3:]))
for k in failed:
    msgs = real(k) + [m for s in subs(k) for m in real(s)]
    print(f"  {k[0].rsplit('/', 1)[-1]}.{k[1]}: " + " | ".join(msgs[:2])[:300])
PY
