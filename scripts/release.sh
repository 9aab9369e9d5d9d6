#!/usr/bin/env bash
# Builds a release of agent-lsp into dist/ (or $RELEASE_OUT):
#
#   agent-lsp-PLATFORM[.exe]   the server for each platform (PLATFORM is VS Code's name:
#                              linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64,
#                              win32-arm64), stamped with the repository's VERSION
#   agent-lsp-PLATFORM.vsix    the VS Code extension carrying that platform's server
#                              (it prefers its bundled server, else agent-lsp on PATH)
#   agent-lsp.vsix             the universal extension, without a server: agent-lsp on PATH
#   SHA256SUMS                 the SHA-256 of every file above (sha256sum's format), which
#                              the Neovim build step checks a downloaded server against
#
# Usage: scripts/release.sh [--dry-run] [--platform P]...
#   --platform P  only this platform (repeatable; default: all of them). The universal
#                 extension and SHA256SUMS are always made.
#   --dry-run     build everything, but skip the checks of a real release (a clean tree,
#                 HEAD tagged vVERSION); the test command runs it this way.
# The platforms are those scripts/cross-check.sh builds, plus linux-x64. Publishing (the
# release's upload, vsce publish, ovsx publish) is left to the person releasing: the
# script prints the commands.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

# VS Code's platform names and Go's, in the order they are built.
all=(linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64)
declare -A goos=([linux]=linux [darwin]=darwin [win32]=windows)
declare -A goarch=([x64]=amd64 [arm64]=arm64)

dry=0
platforms=()
while (($#)); do
	case "$1" in
	--dry-run) dry=1 ;;
	--platform)
		[[ $# -ge 2 ]] || { echo "release: --platform needs a value: one of ${all[*]}" >&2; exit 2; }
		[[ " ${all[*]} " == *" $2 "* ]] || { echo "release: unknown platform \"$2\": want one of ${all[*]}" >&2; exit 2; }
		platforms+=("$2")
		shift
		;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "release: unknown argument \"$1\" (see --help)" >&2; exit 2 ;;
	esac
	shift
done
((${#platforms[@]})) || platforms=("${all[@]}")

version="$(tr -d '[:space:]' <VERSION)"
ext="$repo/editors/vscode"
pkg_version="$(node -p 'require(process.argv[1]).version' "$ext/package.json")"
[[ "$pkg_version" == "$version" ]] || { echo "release: editors/vscode/package.json's version $pkg_version is not VERSION's $version" >&2; exit 1; }
if ((!dry)); then
	[[ -z "$(git status --porcelain)" ]] || { echo "release: the tree has uncommitted changes (--dry-run builds anyway)" >&2; exit 1; }
	git tag --points-at HEAD | grep -qx "v$version" || { echo "release: HEAD is not tagged v$version (--dry-run builds anyway)" >&2; exit 1; }
fi
out="${RELEASE_OUT:-$repo/dist}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
echo "release: agent-lsp $version for ${platforms[*]} into $out$( ((dry)) && echo ' (dry run)')" >&2

exe() { [[ $1 == win32-* ]] && echo "agent-lsp-$1.exe" || echo "agent-lsp-$1"; }

for p in "${platforms[@]}"; do
	echo "release: go build $p (${goos[${p%-*}]}/${goarch[${p#*-}]})" >&2
	GOOS="${goos[${p%-*}]}" GOARCH="${goarch[${p#*-}]}" CGO_ENABLED=0 \
		go build -trimpath -ldflags="-s -w -X github.com/agent-lsp/agent-lsp/server.Version=$version" -o "$out/$(exe "$p")" ./cmd/agent-lsp
done

# The extension: bundled once, packaged once per platform with its server in
# bin/ and once without. The LICENSE is the repository's, copied in for vsce;
# relative links in its README resolve to the tagged sources on GitHub.
cd "$ext"
if [[ ! -d node_modules/@vscode/vsce || package-lock.json -nt node_modules/.package-lock.json ]]; then
	echo "release: npm ci (editors/vscode)" >&2
	npm ci --no-audit --no-fund --loglevel=error
fi
cleanup() { rm -rf "$ext/bin" "$ext/LICENSE"; }
trap cleanup EXIT
cleanup
cp "$repo/LICENSE" LICENSE
node esbuild.mjs --production
base="https://github.com/agent-lsp/agent-lsp"
package() {
	npx --no-install vsce package "$@" --no-dependencies \
		--no-gitHubIssueLinking \
		--baseContentUrl "$base/blob/v$version/editors/vscode" --baseImagesUrl "$base/raw/v$version/editors/vscode" >&2
}
# vsce ls: what every package holds besides bin/ (a file outside this list is
# a leak of sources or tests), without a warning.
listed="$(npx --no-install vsce ls --no-dependencies 2>"$out/.vsce-ls.err" | sort | tr '\n' ' ')"
want="LICENSE README.md dist/extension.js media/agent.svg media/chat.css media/chat.js media/icon.png media/slash.js package.json "
[[ "$listed" == "$want" ]] || { echo "release: vsce ls lists \"$listed\", want \"$want\"" >&2; exit 1; }
[[ ! -s "$out/.vsce-ls.err" ]] || { echo "release: vsce ls warned:" >&2; cat "$out/.vsce-ls.err" >&2; exit 1; }
rm -f "$out/.vsce-ls.err"
for p in "${platforms[@]}"; do
	echo "release: vsce package --target $p" >&2
	mkdir -p bin
	bin="bin/agent-lsp"
	[[ $p == win32-* ]] && bin="bin/agent-lsp.exe"
	cp "$out/$(exe "$p")" "$bin" && chmod 755 "$bin"
	package --target "$p" -o "$out/agent-lsp-$p.vsix"
	rm -rf bin
done
echo "release: vsce package (universal: agent-lsp on PATH)" >&2
package -o "$out/agent-lsp.vsix"

# SHA256SUMS: every artifact this run made, by name (what a download checks
# itself against).
cd "$out"
files=()
for p in "${platforms[@]}"; do
	files+=("$(exe "$p")" "agent-lsp-$p.vsix")
done
files+=(agent-lsp.vsix)
sha256sum "${files[@]}" >SHA256SUMS
echo "release: done: $out" >&2
cat SHA256SUMS >&2
if ((!dry)); then
	cat >&2 <<EOF
release: to publish (each needs its token):
  gh release create v$version $out/SHA256SUMS ${files[*]/#/$out/}
  npx vsce publish --packagePath $out/*.vsix
  npx ovsx publish --packagePath $out/*.vsix
EOF
fi
