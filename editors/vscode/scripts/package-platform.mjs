// npm run package:platform [-- TARGET]: a platform .vsix that carries the
// agent-lsp server binary (bin/agent-lsp), built with Go for TARGET (a vsce
// target such as linux-x64, darwin-arm64, win32-x64; default: this machine's).
// The extension uses that binary unless agentLsp.path names another
// (config.ts, serverExecutable). bin/ is removed afterwards, so the plain
// `npm run package` stays platform-neutral.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ext = join(dirname(fileURLToPath(import.meta.url)), "..");
const repo = join(ext, "..", "..");

/** vsce's platform and architecture names, by Go's. */
const goos = { linux: "linux", darwin: "darwin", win32: "windows", alpine: "linux" };
const goarch = { x64: "amd64", arm64: "arm64", armhf: "arm" };

const target = process.argv[2] ?? `${process.platform}-${process.arch}`;
const [platform, arch] = target.split("-");
if (!goos[platform] || !goarch[arch]) {
  throw new Error(`unknown target ${target}: want one of ${Object.keys(goos).join("|")}-${Object.keys(goarch).join("|")}`);
}
const bin = join(ext, "bin", platform === "win32" ? "agent-lsp.exe" : "agent-lsp");
const out = join(ext, "dist", `agent-lsp-${target}.vsix`);
mkdirSync(join(ext, "dist"), { recursive: true });
try {
  execFileSync("go", ["build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/agent-lsp"], {
    cwd: repo,
    stdio: "inherit",
    env: { ...process.env, GOOS: goos[platform], GOARCH: goarch[arch], CGO_ENABLED: "0" },
  });
  execFileSync("node", ["esbuild.mjs", "--production"], { cwd: ext, stdio: "inherit" });
  execFileSync("npx", ["--no-install", "vsce", "package", "--no-dependencies", "--skip-license", "--target", target, "-o", out], { cwd: ext, stdio: "inherit" });
} finally {
  rmSync(join(ext, "bin"), { recursive: true, force: true });
}
console.error(`packaged ${out}`);
