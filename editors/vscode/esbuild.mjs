// Bundles the extension (dist/extension.js) or, with --tests, the unit and
// integration tests (out/test/*.test.js) with the vscode API replaced by a stub.
import * as esbuild from "esbuild";
import { readdirSync, rmSync } from "node:fs";

const tests = process.argv.includes("--tests");
const production = process.argv.includes("--production");

const common = { bundle: true, platform: "node", format: "cjs", target: "node20", logLevel: "warning", sourcemap: !production };

if (tests) {
  rmSync("out/test", { recursive: true, force: true }); // a renamed or deleted test leaves no stale bundle behind
  await esbuild.build({
    ...common,
    entryPoints: readdirSync("test")
      .filter((f) => f.endsWith(".test.ts"))
      .map((f) => `test/${f}`),
    outdir: "out/test",
    alias: { vscode: "./test/vscode-stub.ts" },
  });
} else {
  await esbuild.build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    external: ["vscode"],
    minify: production,
  });
}
