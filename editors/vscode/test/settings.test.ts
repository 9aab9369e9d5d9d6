// The settings package.json contributes. Those that run programs or send data
// elsewhere are machine or application scoped, so neither a cloned repository
// nor the agent (through .vscode/settings.json or a .code-workspace file) can
// set them, and they are restricted in Restricted Mode. A new setting counts
// as one of those until it is listed below as harmless, with the reason.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { defaultSettings } from "../src/config";

const pkg = JSON.parse(readFileSync("package.json", "utf8"));
const properties: Record<string, { scope?: string; default?: unknown }> = pkg.contributes.configuration.properties;

/** The settings that neither run programs nor send data elsewhere, and why a workspace may set them. */
const harmless: Record<string, string> = {
  "agentLsp.model": "a model of the endpoint the user chose",
  "agentLsp.edits": "how edits reach the editor; every edit reaches it either way",
  // Off, commands run on the disk as it is, and the agent is told which of its edits they did not
  // see; on, the extension saves only what the agent edited. Neither runs a program nor sends data.
  "agentLsp.saveBeforeCommands": "whether the agent's edits are saved before its commands; the agent is told either way",
  "agentLsp.trace.server": "a trace in a local output channel",
  // The server starts only in a trusted workspace either way, with the user's machine-scoped binary.
  "agentLsp.autoStart": "when the server starts: at once, or when a command first needs it",
  // The tuning settings (config.ts): how much of the conversation the model of the user's endpoint
  // sees, and what subagents may do. Read once per window by the one server, hence window-scoped.
  "agentLsp.contextTokens": "how much of the conversation each request carries, to the endpoint the user chose",
  "agentLsp.window": "how many recent messages each request carries, to the endpoint the user chose",
  "agentLsp.toolOutput": "how much of one tool output a request carries, to the endpoint the user chose",
  "agentLsp.readOnlySubagents": "which of the main agent's tools subagents get, under the main agent's permissions either way",
  "agentLsp.mcpTimeout": "how long the user's MCP servers' calls may take before they are cancelled",
  "agentLsp.mcpIdle": "when idle MCP servers stop; the next call starts them again",
  "agentLsp.diagnosticsWait": "how long an edit's result waits for VS Code's own diagnostics of the edited file",
};

/**
 * The scope of each other setting. machine: a file of, or an endpoint reached
 * from, the machine the server runs on (user settings, or a remote's machine
 * settings). application: the user's permission policy, from the user's own
 * settings only, which nothing on a remote can write.
 */
const scopes: Record<string, "machine" | "application"> = {
  "agentLsp.path": "machine",
  "agentLsp.baseURL": "machine",
  "agentLsp.storePath": "machine",
  "agentLsp.allow": "application",
  "agentLsp.deny": "application",
  "agentLsp.allowEdit": "application",
  "agentLsp.scrubEnv": "application",
  // What the user's account pays per token: a workspace must not hide or inflate the cost shown.
  "agentLsp.prices": "application",
  // Programs the server starts (or endpoints it sends tool calls to), and which of a repository's start unasked.
  "agentLsp.mcpServers": "application",
  "agentLsp.mcpConfigFiles": "application",
  "agentLsp.mcpAllow": "application",
  // The language servers the server starts when an editor gives it no language features: programs.
  "agentLsp.languageServers": "application",
};

const sensitive = Object.keys(properties).filter((k) => !(k in harmless));

test("every setting that runs programs or sends data elsewhere is machine or application scoped", () => {
  assert.deepEqual([...sensitive].sort(), Object.keys(scopes).sort(), "a new setting needs a scope here, or a reason in harmless");
  for (const key of sensitive) {
    const scope = properties[key]?.scope;
    assert.ok(scope === "machine" || scope === "application", `${key} is scoped ${scope ?? "window"}`);
    assert.equal(scope, scopes[key], key);
  }
});

test("every harmless setting is contributed and window-scoped: one value for the window's one server", () => {
  for (const key of Object.keys(harmless)) {
    assert.ok(properties[key], `${key} is not contributed`);
    assert.ok([undefined, "window"].includes(properties[key].scope), `${key} is scoped ${properties[key].scope}`);
  }
});

test("Restricted Mode: limited support, restricting exactly those settings", () => {
  const untrusted = pkg.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, "limited");
  assert.ok(untrusted.description);
  assert.deepEqual([...untrusted.restrictedConfigurations].sort(), [...sensitive].sort());
});

test("every setting the extension reads is contributed, with the extension's default", () => {
  for (const [key, value] of Object.entries(defaultSettings)) {
    assert.deepEqual(properties[`agentLsp.${key}`]?.default, value, `agentLsp.${key}`);
  }
});
