#!/usr/bin/env bash
# The release, as the test command checks it: scripts/release.sh --dry-run
# --platform linux-x64 into a temporary folder, then what a user downloads:
# SHA256SUMS names exactly the artifacts and they match it, the server says
# VERSION, the linux-x64 .vsix carries that very server (executable, it runs
# --version) and targets linux-x64, the universal .vsix carries no server and
# targets no platform, and both have the marketplace's metadata (license,
# icon, repository). Also: an unknown platform is refused.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
version="$(tr -d '[:space:]' <"$repo/VERSION")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "release-check: $*" >&2; exit 1; }

if bash "$repo/scripts/release.sh" --dry-run --platform linux-arm7 2>"$out/err"; then
	fail "an unknown platform was accepted"
fi
grep -q 'unknown platform "linux-arm7"' "$out/err" || fail "an unknown platform's error: $(cat "$out/err")"

RELEASE_OUT="$out/dist" bash "$repo/scripts/release.sh" --dry-run --platform linux-x64 2>"$out/log" || {
	cat "$out/log" >&2
	fail "release.sh --dry-run --platform linux-x64 failed"
}
cd "$out/dist"
[[ "$(ls | sort | tr '\n' ' ')" == "SHA256SUMS agent-lsp-linux-x64 agent-lsp-linux-x64.vsix agent-lsp.vsix " ]] ||
	fail "dist holds: $(ls | tr '\n' ' ')"
[[ "$(awk '{print $2}' SHA256SUMS | sort | tr '\n' ' ')" == "agent-lsp-linux-x64 agent-lsp-linux-x64.vsix agent-lsp.vsix " ]] ||
	fail "SHA256SUMS names: $(awk '{print $2}' SHA256SUMS | tr '\n' ' ')"
sha256sum --check --quiet SHA256SUMS || fail "an artifact does not match SHA256SUMS"

[[ "$(./agent-lsp-linux-x64 --version)" == "agent-lsp $version ("* ]] || fail "the server says $(./agent-lsp-linux-x64 --version), not $version"

# Listings are read whole before grep: with pipefail, grep -q ending early fails unzip with SIGPIPE.
listing="$(unzip -Z agent-lsp-linux-x64.vsix)"
grep -qE '^-rwx.* extension/bin/agent-lsp$' <<<"$listing" || fail "agent-lsp-linux-x64.vsix has no executable extension/bin/agent-lsp"
mkdir x && (cd x && unzip -q ../agent-lsp-linux-x64.vsix)
cmp -s x/extension/bin/agent-lsp agent-lsp-linux-x64 || fail "the .vsix's server is not the released agent-lsp-linux-x64"
[[ "$(x/extension/bin/agent-lsp --version)" == "agent-lsp $version ("* ]] || fail "the bundled server does not run --version"
grep -q 'TargetPlatform="linux-x64"' x/extension.vsixmanifest || fail "agent-lsp-linux-x64.vsix does not target linux-x64"

listing="$(unzip -Z1 agent-lsp.vsix)"
if grep -q '^extension/bin/' <<<"$listing"; then
	fail "the universal agent-lsp.vsix carries a server: $(grep '^extension/bin/' <<<"$listing")"
fi
mkdir u && (cd u && unzip -q ../agent-lsp.vsix)
! grep -q 'TargetPlatform=' u/extension.vsixmanifest || fail "the universal agent-lsp.vsix targets a platform"

for d in x u; do
	for want in '<License>extension/LICENSE.txt</License>' '<Icon>extension/media/icon.png</Icon>' \
		'Links.Source" Value="https://github.com/agent-lsp/agent-lsp' "Version=\"$version\"" '<Categories>AI,Chat'; do
		grep -qF "$want" "$d/extension.vsixmanifest" || fail "$d's extension.vsixmanifest lacks $want"
	done
	[[ -s $d/extension/media/icon.png && -s $d/extension/LICENSE.txt ]] || fail "$d lacks its icon or license"
done
[[ ! -e "$repo/editors/vscode/bin" && ! -e "$repo/editors/vscode/LICENSE" ]] || fail "release.sh left editors/vscode/bin or LICENSE behind"
echo "release-check: ok (agent-lsp $version: linux-x64 server, its .vsix, the universal .vsix, SHA256SUMS)" >&2
