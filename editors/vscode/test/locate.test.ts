// The binary the extension starts: the start-up race (settings read before the
// machine settings loaded) and the bundled binary of a platform .vsix.
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { bundledBinary, defaultSettings, serverExecutable, type Settings } from "../src/config";
import { locateServer } from "../src/locate";
import { nth } from "./nth";

const dir = mkdtempSync(join(tmpdir(), "agent-lsp-locate-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const exe = join(dir, "agent-lsp-custom");
writeFileSync(exe, "#!/bin/sh\n");
chmodSync(exe, 0o755);

test("a binary not found yet is looked for again once the settings settle: the machine setting that loads late is used", async () => {
  // The race: the first read sees the default (not on this PATH), the machine settings arrive after one change.
  const reads: Settings[] = [{ ...defaultSettings }, { ...defaultSettings, path: exe }];
  let settles = 0;
  const found = await locateServer({
    read: () => ({ settings: nth(reads, Math.min(settles, reads.length - 1)), problems: [] }),
    apiKey: undefined,
    env: { PATH: join(dir, "empty") },
    settled: async () => {
      settles++;
    },
    settleMs: 5000,
  });
  assert.equal(found.ok, true);
  assert.equal(found.exe.command, exe);
  assert.equal(settles, 1);
});

test("a binary that never appears is reported once the settings have settled, not at the first read", async () => {
  let clock = 0;
  let settles = 0;
  const found = await locateServer({
    read: () => ({ settings: { ...defaultSettings, path: join(dir, "missing") }, problems: [] }),
    apiKey: undefined,
    env: { PATH: "" },
    settled: async () => {
      settles++;
      clock += 500;
    },
    settleMs: 5000,
    now: () => clock,
  });
  assert.equal(found.ok, false);
  assert.equal(found.exe.command, join(dir, "missing"));
  assert.equal(settles, 10, "read again every half second for five seconds");
});

test("the bundled binary of a platform .vsix is used unless agentLsp.path names another; else agent-lsp on PATH", () => {
  assert.equal(bundledBinary(dir, "linux"), undefined, "a .vsix without bin/");
  mkdirSync(join(dir, "bin"));
  const bundled = join(dir, "bin", "agent-lsp");
  writeFileSync(bundled, "#!/bin/sh\n");
  chmodSync(bundled, 0o755);
  assert.equal(bundledBinary(dir, "linux"), bundled);
  assert.equal(serverExecutable(defaultSettings, undefined, {}, bundled).command, bundled);
  assert.equal(serverExecutable({ ...defaultSettings, path: exe }, undefined, {}, bundled).command, exe, "the user's setting wins");
  assert.equal(serverExecutable(defaultSettings, undefined, {}, undefined).command, "agent-lsp");
});
