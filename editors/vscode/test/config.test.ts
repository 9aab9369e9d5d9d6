import assert from "node:assert/strict";
import { test } from "node:test";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { defaultSettings, findExecutable, initializationOptions, readSettings, serverExecutable, type SettingProblem } from "../src/config";
import { nth } from "./nth";

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

test("the context settings are read within their ranges; any other value is left to the server and named", () => {
  const values: Record<string, unknown> = { contextTokens: 32768, window: 50.5, toolOutput: "4096", readOnlySubagents: "yes" };
  const problems: SettingProblem[] = [];
  const s = readSettings((k) => values[k] as any, problems);
  assert.deepEqual([s.contextTokens, s.window, s.toolOutput, s.readOnlySubagents], [32768, null, null, false]);
  assert.deepEqual(problems, [
    { setting: "agentLsp.window", message: "agentLsp.window is 50.5, not an integer from 10 to 1000: left out, so the server's own value applies." },
    { setting: "agentLsp.toolOutput", message: 'agentLsp.toolOutput is "4096", not an integer from 1024 to 1048576: left out, so the server\'s own value applies.' },
    { setting: "agentLsp.readOnlySubagents", message: 'agentLsp.readOnlySubagents is "yes", not true or false: left out, so the server\'s own value applies.' },
  ]);
  // The bounds are in; one past them is out.
  const at = (v: Record<string, unknown>) => {
    const p: SettingProblem[] = [];
    return { s: readSettings((k) => v[k] as any, p), problems: p.map((x) => x.setting) };
  };
  const lows = at({ contextTokens: 1024, window: 10, toolOutput: 1024 });
  assert.deepEqual([lows.s.contextTokens, lows.s.window, lows.s.toolOutput, lows.problems], [1024, 10, 1024, []]);
  const highs = at({ contextTokens: 10_000_000, window: 1000, toolOutput: 1_048_576, readOnlySubagents: true });
  assert.deepEqual([highs.s.contextTokens, highs.s.window, highs.s.toolOutput, highs.s.readOnlySubagents, highs.problems], [10_000_000, 1000, 1_048_576, true, []]);
  const out = at({ contextTokens: 1023, window: 1001, toolOutput: 1_048_577 });
  assert.deepEqual([out.s.contextTokens, out.s.window, out.s.toolOutput], [null, null, null]);
  assert.deepEqual(out.problems, ["agentLsp.contextTokens", "agentLsp.window", "agentLsp.toolOutput"]);
  // Unset is no problem.
  const empty = at({ contextTokens: null });
  assert.deepEqual([empty.s.contextTokens, empty.s.window, empty.s.toolOutput, empty.s.readOnlySubagents, empty.problems], [null, null, null, false, []]);
});

test("the context settings go to model.contextTokens, window, toolOutput and subagents.readOnly, only when set", () => {
  const opts = initializationOptions({ ...defaultSettings, model: "qwen2.5-coder", contextTokens: 32768, window: 50, toolOutput: 8192, readOnlySubagents: true });
  assert.deepEqual(opts, {
    edits: "apply",
    permissions: { allow: [], deny: [], allowEdit: [] },
    model: { model: "qwen2.5-coder", contextTokens: 32768 },
    window: 50,
    toolOutput: 8192,
    subagents: { readOnly: true },
  });
  assert.deepEqual(initializationOptions({ ...defaultSettings, contextTokens: 4096 })["model"], { contextTokens: 4096 }, "without a model name too");
  const unset = initializationOptions({ ...defaultSettings, readOnlySubagents: false });
  for (const key of ["model", "window", "toolOutput", "subagents"]) {
    assert.equal(key in unset, false, `${key} unset: the server's environment (AGENT_LSP_*) and defaults apply`);
  }
});

test("the MCP settings go to mcpServers, mcp.configFiles, mcp.allow, mcpTimeout and mcpIdle, only when set; a bad server entry is left out, named", () => {
  const problems: SettingProblem[] = [];
  const values: Record<string, unknown> = {
    mcpServers: { docs: { command: "docs-server", args: ["--stdio"] }, web: { type: "http", url: "https://mcp.example/mcp" }, bad: "npx thing", " ": {} },
    mcpConfigFiles: ["~/mcp/extra.json", 3],
    mcpAllow: ["db"],
    mcpTimeout: 30,
    mcpIdle: 0,
  };
  const s = readSettings(<T>(key: string) => values[key] as T, problems);
  assert.deepEqual(Object.keys(s.mcpServers), ["docs", "web"]);
  assert.deepEqual(
    problems.map((p) => p.setting),
    ["agentLsp.mcpServers", "agentLsp.mcpServers", "agentLsp.mcpIdle"],
  );
  assert.match(nth(problems, 0).message, /"bad" is "npx thing"/);
  const opts = initializationOptions(s);
  assert.deepEqual(opts["mcpServers"], { docs: { command: "docs-server", args: ["--stdio"] }, web: { type: "http", url: "https://mcp.example/mcp" } });
  assert.deepEqual(opts["mcp"], { configFiles: [join(homedir(), "mcp/extra.json")], allow: ["db"] });
  assert.equal(opts["mcpTimeout"], 30);
  assert.equal("mcpIdle" in opts, false, "out of range: the server's default applies");
  const unset = initializationOptions(defaultSettings);
  for (const key of ["mcpServers", "mcp", "mcpTimeout", "mcpIdle"]) {
    assert.equal(key in unset, false, `${key} unset: not sent`);
  }
});

test("the API key reaches the server only through its environment", () => {
  const env = { PATH: "/bin", OPENAI_API_KEY: "from-shell" };
  const withKey = serverExecutable(defaultSettings, "sk-stored", env);
  assert.equal(withKey.command, "agent-lsp");
  assert.equal(withKey.options.env["OPENAI_API_KEY"], "sk-stored");
  assert.equal(env.OPENAI_API_KEY, "from-shell", "the extension host's environment is not changed");
  assert.equal(serverExecutable(defaultSettings, undefined, env).options.env["OPENAI_API_KEY"], "from-shell");
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

test("saving before commands is on unless turned off, and never goes to the server, which asks each time", () => {
  assert.equal(readSettings(() => undefined).saveBeforeCommands, true);
  assert.equal(readSettings((k) => (k === "saveBeforeCommands" ? (false as any) : undefined)).saveBeforeCommands, false);
  assert.deepEqual(initializationOptions({ ...defaultSettings, saveBeforeCommands: false }), initializationOptions(defaultSettings));
});

test("prices: valid entries are kept, the others left out with a problem naming them", () => {
  const problems: SettingProblem[] = [];
  const s = readSettings((key) => (key === "prices" ? ({ "gpt-4o": { input: 2.5, output: 10 }, bad: { input: -1, output: 1 }, half: { input: 1 } } as any) : undefined), problems);
  assert.deepEqual(s.prices, { "gpt-4o": { input: 2.5, output: 10 } });
  assert.deepEqual(
    problems.map((p) => p.setting),
    ["agentLsp.prices", "agentLsp.prices"],
  );
  assert.match(nth(problems, 0).message, /"bad"/);
  const listed: SettingProblem[] = [];
  assert.deepEqual(readSettings((key) => (key === "prices" ? ([1] as any) : undefined), listed).prices, {});
  assert.match(nth(listed, 0).message, /not an object of models/);
});
