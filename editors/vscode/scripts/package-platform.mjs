// npm run package:platform [-- TARGET]: a platform .vsix that carries the
// agent-lsp server binary (bin/agent-lsp), built with Go for TARGET (a vsce
// target such as linux-x64, darwin-arm64, win32-x64; default: this machine's).
// The extension uses that binary unless agentLsp.path names another
// (config.ts, serverExecutable). bin/ is removed afterwards, so the plain
// `npm run package` stays platform-neutral.
//
// The binary is stamped with the repository's VERSION (-ldflags -X), which
// package.json's version must equal: server and extension carry one version.
// Each step (the Go build, the bundle, the .vsix) prints a line on stderr
// when it starts, every 15 s while it runs, and when it ends, with its time.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
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
const version = readFileSync(join(repo, "VERSION"), "utf8").trim();
const pkgVersion = JSON.parse(readFileSync(join(ext, "package.json"), "utf8")).version;
if (pkgVersion !== version) {
  throw new Error(`package.json's version ${pkgVersion} is not VERSION's ${version}: change both together`);
}
const bin = join(ext, "bin", platform === "win32" ? "agent-lsp.exe" : "agent-lsp");
const out = join(ext, "dist", `agent-lsp-${target}.vsix`);

function seconds(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** Runs argv in cwd with env as step n of 3: a line at its start (with hint), every 15 s while it runs, and at its end with its time. */
async function step(n, what, argv, cwd, env = process.env, hint = "") {
  const label = `package:platform [${n}/3] ${what}`;
  console.error(`${label} ...${hint && ` (${hint})`}`);
  const t = Date.now();
  const tick = setInterval(() => console.error(`${label}: still running (${seconds(Date.now() - t)})`), 15000);
  try {
    await new Promise((resolve, reject) => {
      const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: "inherit" });
      child.on("error", reject);
      child.on("exit", (code, signal) => (code === 0 ? resolve() : reject(new Error(`${label} failed (${signal ?? `exit ${code}`})`))));
    });
  } finally {
    clearInterval(tick);
  }
  console.error(`${label}: done in ${seconds(Date.now() - t)}`);
}

const started = Date.now();
console.error(`package:platform: agent-lsp ${version} for ${target}`);
mkdirSync(join(ext, "dist"), { recursive: true });
try {
  await step(
    1,
    `go build ./cmd/agent-lsp for ${goos[platform]}/${goarch[arch]}`,
    ["go", "build", "-trimpath", `-ldflags=-s -w -X github.com/agent-lsp/agent-lsp/server.Version=${version}`, "-o", bin, "./cmd/agent-lsp"],
    repo,
    { ...process.env, GOOS: goos[platform], GOARCH: goarch[arch], CGO_ENABLED: "0" },
    "a first build compiles every package: minutes",
  );
  await step(2, "bundle the extension (esbuild --production)", ["node", "esbuild.mjs", "--production"], ext);
  await step(3, `vsce package --target ${target}`, ["npx", "--no-install", "vsce", "package", "--no-dependencies", "--skip-license", "--target", target, "-o", out], ext);
} finally {
  rmSync(join(ext, "bin"), { recursive: true, force: true });
}
const size = (statSync(out).size / 1e6).toFixed(1);
console.error(`package:platform: ${relative(process.cwd(), out) || out} (${size} MB) in ${seconds(Date.now() - started)}`);
console.error(`install it: code --install-extension ${out}`);
