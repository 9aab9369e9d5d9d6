// Unit tests of Agent: About's report and of reading a binary's version.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { aboutReport, binaryVersion, parseVersion } from "../src/about";

describe("about", () => {
  test("parseVersion reads agent-lsp --version's output", () => {
    assert.equal(parseVersion("agent-lsp 0.2.0 (go1.26.0 linux/amd64)\n"), "0.2.0");
    assert.equal(parseVersion("usage: something else"), undefined);
  });

  test("the report names both versions, and warns when they differ or are unknown", () => {
    assert.deepEqual(aboutReport({ extension: "1.2.3", server: { command: "agent-lsp", version: "1.2.3", running: false } }), {
      text: "agent-lsp: extension 1.2.3, server 1.2.3 (agent-lsp)",
    });
    const older = aboutReport({ extension: "1.2.3", server: { command: "/bin/agent-lsp", version: "1.0.0", running: true } });
    assert.equal(older.text, "agent-lsp: extension 1.2.3, server 1.0.0 (/bin/agent-lsp, running)");
    assert.match(older.warning!, /not the extension's version 1\.2\.3/);
    const mute = aboutReport({ extension: "1.2.3", server: { command: "/bin/x", running: false, error: "exit 2" } });
    assert.equal(mute.text, "agent-lsp: extension 1.2.3; the server /bin/x did not tell its version: exit 2");
    assert.ok(mute.warning);
  });

  test("binaryVersion runs the binary with --version", async () => {
    const dir = mkdtempSync(join(tmpdir(), "about-"));
    const bin = join(dir, "agent-lsp");
    writeFileSync(bin, '#!/bin/sh\n[ "$1" = --version ] && echo "agent-lsp 9.9.9 (go1.26 linux/amd64)"\n');
    chmodSync(bin, 0o755);
    assert.deepEqual(await binaryVersion(bin, process.env), { version: "9.9.9" });
    const missing = await binaryVersion(join(dir, "none"), process.env);
    assert.equal(missing.version, undefined);
    assert.match(missing.error!, /ENOENT/);
  });

  test("the extension's version is the repository's VERSION", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8"));
    assert.equal(pkg.version, readFileSync("../../VERSION", "utf8").trim());
  });
});
