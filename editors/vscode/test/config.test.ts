import assert from "node:assert/strict";
import { test } from "node:test";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultSettings, findExecutable, initializationOptions, readSettings, serverExecutable } from "../src/config";

test("settings fall back to the defaults and are trimmed", () => {
  const values: Record<string, unknown> = { path: "  ", model: " llama3 ", edits: "bogus", allow: ["go test *", "", 3] };
  const s = readSettings((k) => values[k] as any);
  assert.deepEqual(s, { ...defaultSettings, model: "llama3", allow: ["go test *"] });
});

test("initializationOptions carry model, store, edit mode and permissions, never a key", () => {
  const opts = initializationOptions({ ...defaultSettings, baseURL: "http://localhost:11434/v1", storePath: "/tmp/s.db", edits: "review", deny: ["rm *"] });
  assert.deepEqual(opts, {
    edits: "review",
    permissions: { allow: [], deny: ["rm *"], allowEdit: [] },
    model: { baseURL: "http://localhost:11434/v1" },
    store: { path: "/tmp/s.db" },
  });
  assert.deepEqual(initializationOptions(defaultSettings), { edits: "apply", permissions: { allow: [], deny: [], allowEdit: [] } });
});

test("allowEdit and scrubEnv are read as lists of patterns", () => {
  const values: Record<string, unknown> = { allowEdit: [".vscode/settings.json", " ", null], scrubEnv: "*_TOKEN" };
  const s = readSettings((k) => values[k] as any);
  assert.deepEqual(s.allowEdit, [".vscode/settings.json"]);
  assert.deepEqual(s.scrubEnv, [], "a value that is not a list is no list");
});

test("allowEdit goes with the permissions; scrubEnv goes only when set, since it replaces the server's defaults", () => {
  const opts = initializationOptions({ ...defaultSettings, allowEdit: [".vscode/settings.json", ".github/workflows/**"], scrubEnv: ["*_TOKEN", "KUBECONFIG"] });
  assert.deepEqual(opts, {
    edits: "apply",
    permissions: { allow: [], deny: [], allowEdit: [".vscode/settings.json", ".github/workflows/**"] },
    scrubEnv: ["*_TOKEN", "KUBECONFIG"],
  });
  assert.equal("scrubEnv" in initializationOptions(defaultSettings), false, "unset: the server's default list applies");
});

test("the API key reaches the server only through its environment", () => {
  const env = { PATH: "/bin", OPENAI_API_KEY: "from-shell" };
  const withKey = serverExecutable(defaultSettings, "sk-stored", env);
  assert.equal(withKey.command, "agent-lsp");
  assert.equal(withKey.options.env.OPENAI_API_KEY, "sk-stored");
  assert.equal(env.OPENAI_API_KEY, "from-shell", "the extension host's environment is not changed");
  assert.equal(serverExecutable(defaultSettings, undefined, env).options.env.OPENAI_API_KEY, "from-shell");
  assert.ok(!serverExecutable({ ...defaultSettings, path: "~/bin/agent-lsp" }, undefined, env).command.startsWith("~"));
});

test("the server binary is found by path or on PATH, and a missing one is reported", () => {
  const dir = mkdtempSync(join(tmpdir(), "agent-lsp-find-"));
  const bin = join(dir, "agent-lsp");
  writeFileSync(bin, "#!/bin/sh\n");
  chmodSync(bin, 0o755);
  writeFileSync(join(dir, "not-executable"), "");
  assert.equal(findExecutable("agent-lsp", { PATH: `/nonexistent:${dir}` }), bin);
  assert.equal(findExecutable(bin, {}), bin);
  assert.equal(findExecutable("agent-lsp", { PATH: "/nonexistent" }), undefined);
  assert.equal(findExecutable(join(dir, "not-executable"), {}), undefined);
  assert.equal(findExecutable(dir, {}), undefined, "a directory is not a binary");
});
