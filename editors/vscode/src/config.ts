// Settings, server options and initializationOptions. No vscode import: the
// integration test starts the server with exactly these options.
import { accessSync, constants, statSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** The extension's settings (the agentLsp.* configuration). */
export interface Settings {
  path: string;
  model: string;
  baseURL: string;
  storePath: string;
  edits: "apply" | "review";
  allow: string[];
  deny: string[];
  allowEdit: string[];
  scrubEnv: string[];
  /** The model's context size in tokens; null: the server's (AGENT_LSP_CONTEXT_TOKENS, else auto). */
  contextTokens: number | null;
  /** Most recent messages the model sees; null: the server's (AGENT_LSP_WINDOW, else 200). */
  window: number | null;
  /** Bytes of one tool output the model sees; null: the server's (AGENT_LSP_TOOL_OUTPUT, else 16384). */
  toolOutput: number | null;
  /** Subagents get only the tools that read. */
  readOnlySubagents: boolean;
  /** Save the documents the agent edited before its commands run (agent/saveDocuments). */
  saveBeforeCommands: boolean;
  /** USD per million input and output tokens, by model; empty: the server's (AGENT_LSP_PRICES, else none). */
  prices: Prices;
  /** Start the server when the window opens, not when a command first needs it. */
  autoStart: boolean;
  /** MCP servers in the .mcp.json shape, by name; empty: none but the user's mcp.json and the repository's. */
  mcpServers: Record<string, unknown>;
  /** Files in the .mcp.json shape whose servers runs may use. */
  mcpConfigFiles: string[];
  /** A repository's .mcp.json servers that start without asking, by name; * for all. */
  mcpAllow: string[];
  /** Seconds one MCP tool call may take; null: the server's (AGENT_LSP_MCP_TIMEOUT, else 60). */
  mcpTimeout: number | null;
  /** Seconds without a call after which a project's MCP servers stop; null: the server's (600). */
  mcpIdle: number | null;
  /** The language servers agent-lsp starts when VS Code gives no language features, by project type; empty: the built-in ones. */
  languageServers: Record<string, unknown>;
  /** Milliseconds an edit's result waits for VS Code's diagnostics of the edited file; null: the server's (1500). */
  diagnosticsWait: number | null;
}

/** USD per million tokens of one model's input (prompt) and output (completion). */
export interface Price {
  input: number;
  output: number;
}

/** Prices by model name. */
export type Prices = Record<string, Price>;

/** The SecretStorage key that holds the API key. */
export const apiKeySecret = "agentLsp.apiKey";

/** Defaults, as package.json declares them. */
export const defaultSettings: Settings = {
  path: "agent-lsp",
  model: "",
  baseURL: "",
  storePath: "",
  edits: "apply",
  allow: [],
  deny: [],
  allowEdit: [],
  scrubEnv: [],
  contextTokens: null,
  window: null,
  toolOutput: null,
  readOnlySubagents: false,
  saveBeforeCommands: true,
  prices: {},
  autoStart: false,
  mcpServers: {},
  mcpConfigFiles: [],
  mcpAllow: [],
  mcpTimeout: null,
  mcpIdle: null,
  languageServers: {},
  diagnosticsWait: null,
};

/**
 * What a change of each setting does (settingsChange.ts). restart: the server
 * reads it when it starts (the binary; the store file, which the server keeps
 * until it restarts). configure: it goes to the running server as
 * workspace/didChangeConfiguration, for the runs that start from then on.
 * local: the extension reads it each time it needs it.
 */
export const settingEffect: Record<keyof Settings, "restart" | "configure" | "local"> = {
  path: "restart",
  storePath: "restart",
  model: "configure",
  baseURL: "configure",
  edits: "configure",
  allow: "configure",
  deny: "configure",
  allowEdit: "configure",
  scrubEnv: "configure",
  contextTokens: "configure",
  window: "configure",
  toolOutput: "configure",
  readOnlySubagents: "configure",
  prices: "configure",
  mcpServers: "configure",
  mcpConfigFiles: "configure",
  mcpAllow: "configure",
  mcpTimeout: "configure",
  mcpIdle: "configure",
  languageServers: "configure",
  diagnosticsWait: "configure",
  saveBeforeCommands: "local",
  autoStart: "local",
};

/** The settings whose change restarts the server. */
export const restartSettings = (Object.keys(settingEffect) as (keyof Settings)[]).filter((k) => settingEffect[k] === "restart");

/** The settings whose change goes to the running server. */
export const configureSettings = (Object.keys(settingEffect) as (keyof Settings)[]).filter((k) => settingEffect[k] === "configure");

type TuningKey = "contextTokens" | "window" | "toolOutput" | "readOnlySubagents" | "mcpTimeout" | "mcpIdle" | "diagnosticsWait";

/** A setting that goes to the server as it is: its initializationOptions key, and for an integer its range. */
interface Tuning {
  init: string;
  range?: readonly [number, number];
}

/**
 * How much of the conversation the model sees, what subagents may do and how
 * long MCP servers may take and idle, by setting: the initializationOptions key and range of docs/protocol.md's
 * settings table (package.json declares the same ranges). Unset (null, false):
 * not sent, so that the server's environment (AGENT_LSP_CONTEXT_TOKENS, ...)
 * and defaults apply.
 */
export const tuning: Record<TuningKey, Tuning> = {
  contextTokens: { init: "model.contextTokens", range: [1024, 10_000_000] },
  window: { init: "window", range: [10, 1000] },
  toolOutput: { init: "toolOutput", range: [1024, 1_048_576] },
  readOnlySubagents: { init: "subagents.readOnly" },
  mcpTimeout: { init: "mcpTimeout", range: [1, 3600] },
  mcpIdle: { init: "mcpIdle", range: [1, 86400] },
  diagnosticsWait: { init: "diagnosticsWait", range: [100, 60000] },
};

/** A setting's value that readSettings left out, and why. */
export interface SettingProblem {
  /** The full name, e.g. agentLsp.window. */
  setting: string;
  message: string;
}

/**
 * Reads settings through get (a WorkspaceConfiguration's get), filling
 * defaults. A value of a tuning setting that is out of range or of the wrong
 * type is left out (the server would refuse to start with it), and problems
 * gets why.
 */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- WorkspaceConfiguration.get's shape
export function readSettings(get: <T>(key: string) => T | undefined, problems?: SettingProblem[]): Settings {
  const s = { ...defaultSettings };
  const str = (key: keyof Settings) => {
    const v = get<string>(key);
    return typeof v === "string" ? v.trim() : "";
  };
  const list = (key: keyof Settings) => {
    const v = get<unknown[]>(key);
    return Array.isArray(v) ? v.filter((p): p is string => typeof p === "string" && p.trim() !== "") : [];
  };
  s.path = str("path") || defaultSettings.path;
  s.model = str("model");
  s.baseURL = str("baseURL");
  s.storePath = str("storePath");
  s.edits = get<string>("edits") === "review" ? "review" : "apply";
  s.allow = list("allow");
  s.deny = list("deny");
  s.allowEdit = list("allowEdit");
  s.scrubEnv = list("scrubEnv");
  s.saveBeforeCommands = get<unknown>("saveBeforeCommands") !== false; // on unless turned off
  s.autoStart = get<unknown>("autoStart") === true;
  s.prices = readPrices(get<unknown>("prices"), problems);
  s.mcpServers = readMcpServers(get<unknown>("mcpServers"), problems);
  s.mcpConfigFiles = list("mcpConfigFiles");
  s.mcpAllow = list("mcpAllow");
  s.languageServers = readLanguageServers(get<unknown>("languageServers"), problems);
  for (const [key, t] of Object.entries(tuning) as [TuningKey, Tuning][]) {
    const v = get<unknown>(key);
    if (t.range ? isIn(v, t.range) : typeof v === "boolean") {
      (s as Record<TuningKey, unknown>)[key] = v;
    } else if (v !== undefined && v !== null) {
      const want = t.range ? `an integer from ${t.range[0]} to ${t.range[1]}` : "true or false";
      const setting = `agentLsp.${key}`;
      problems?.push({ setting, message: `${setting} is ${JSON.stringify(v)}, not ${want}: left out, so the server's own value applies.` });
    }
  }
  return s;
}

/**
 * The valid entries of the prices setting: {model: {input, output}} with
 * non-negative numbers. Others are left out (the server would refuse the
 * whole setting), and problems gets why.
 */
export function readPrices(v: unknown, problems?: SettingProblem[]): Prices {
  const out: Prices = {};
  if (v === undefined || v === null) {
    return out;
  }
  const setting = "agentLsp.prices";
  if (typeof v !== "object" || Array.isArray(v)) {
    problems?.push({ setting, message: `${setting} is ${JSON.stringify(v)}, not an object of models: left out, so the server's own prices apply.` });
    return out;
  }
  const price = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
  for (const [model, p] of Object.entries(v as Record<string, unknown>)) {
    const { input, output } = (p ?? {}) as Record<string, unknown>;
    if (model.trim() && price(input) && price(output)) {
      out[model.trim()] = { input: input as number, output: output as number };
    } else {
      problems?.push({ setting, message: `${setting}: the price of ${JSON.stringify(model)} is ${JSON.stringify(p)}, not {"input": USD, "output": USD} per million tokens: left out.` });
    }
  }
  return out;
}

/**
 * The valid entries of the mcpServers setting: {name: {...}} with an object
 * per server (the server checks each definition and reports what it cannot
 * run). Others are left out, and problems gets why.
 */
export function readMcpServers(v: unknown, problems?: SettingProblem[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (v === undefined || v === null) {
    return out;
  }
  const setting = "agentLsp.mcpServers";
  if (typeof v !== "object" || Array.isArray(v)) {
    problems?.push({ setting, message: `${setting} is ${JSON.stringify(v)}, not an object of servers by name: left out.` });
    return out;
  }
  for (const [name, def] of Object.entries(v as Record<string, unknown>)) {
    if (name.trim() && def !== null && typeof def === "object" && !Array.isArray(def)) {
      out[name] = def;
    } else {
      problems?.push({ setting, message: `${setting}: the server ${JSON.stringify(name)} is ${JSON.stringify(def)}, not {"command": ...} or {"type": "http", "url": ...}: left out.` });
    }
  }
  return out;
}

/**
 * The valid entries of the languageServers setting: {projectType: {command,
 * args, initializationOptions} | null}. Others are left out (the server
 * would refuse the whole setting), and problems gets why.
 */
export function readLanguageServers(v: unknown, problems?: SettingProblem[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (v === undefined || v === null) {
    return out;
  }
  const setting = "agentLsp.languageServers";
  if (typeof v !== "object" || Array.isArray(v)) {
    problems?.push({ setting, message: `${setting} is ${JSON.stringify(v)}, not an object of servers by project type: left out.` });
    return out;
  }
  const known = ["command", "args", "initializationOptions", "extensions"];
  for (const [type, def] of Object.entries(v as Record<string, unknown>)) {
    const d = def as Record<string, unknown>;
    const ok =
      def === null ||
      (typeof def === "object" &&
        !Array.isArray(def) &&
        type !== "*" &&
        typeof d["command"] === "string" &&
        d["command"].trim() !== "" &&
        Object.keys(d).every((k) => known.includes(k)) &&
        (d["args"] === undefined || (Array.isArray(d["args"]) && d["args"].every((a) => typeof a === "string"))));
    if (ok && type.trim()) {
      out[type] = def;
    } else {
      problems?.push({ setting, message: `${setting}: ${JSON.stringify(type)} is ${JSON.stringify(def)}, not {"command": ..., "args": [...]} or null: left out.` });
    }
  }
  return out;
}

/** True for an integer within range. */
function isIn(v: unknown, [min, max]: readonly [number, number]): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;
}

/**
 * The server's initializationOptions for these settings; never carries the API key.
 * scrubEnv replaces the server's default list, so it goes only when set. A
 * setting left empty goes not at all, so that the server's environment
 * (AGENT_LSP_MODEL, AGENT_LSP_CONTEXT_TOKENS, ...) and defaults apply.
 */
export function initializationOptions(s: Settings): Record<string, unknown> {
  const opts: Record<string, unknown> = {
    edits: s.edits,
    permissions: { allow: s.allow, deny: s.deny, allowEdit: s.allowEdit },
  };
  if (s.scrubEnv.length > 0) {
    opts["scrubEnv"] = s.scrubEnv;
  }
  if (s.model || s.baseURL) {
    opts["model"] = { ...(s.model && { model: s.model }), ...(s.baseURL && { baseURL: s.baseURL }) };
  }
  if (Object.keys(s.prices).length > 0) {
    put(opts, "model.prices", s.prices);
  }
  for (const [key, t] of Object.entries(tuning) as [TuningKey, Tuning][]) {
    if (s[key] !== null && s[key] !== false) {
      put(opts, t.init, s[key]);
    }
  }
  if (s.storePath) {
    opts["store"] = { path: expandHome(s.storePath) };
  }
  if (Object.keys(s.mcpServers).length > 0) {
    opts["mcpServers"] = s.mcpServers;
  }
  if (s.mcpConfigFiles.length > 0) {
    put(opts, "mcp.configFiles", s.mcpConfigFiles.map(expandHome));
  }
  if (s.mcpAllow.length > 0) {
    put(opts, "mcp.allow", s.mcpAllow);
  }
  if (Object.keys(s.languageServers).length > 0) {
    opts["languageServers"] = s.languageServers;
  }
  return opts;
}

/** Sets the dotted key (e.g. model.contextTokens) of opts to value, adding the objects on its way. */
function put(opts: Record<string, unknown>, key: string, value: unknown): void {
  const names = key.split(".");
  const last = names.pop() ?? key;
  let at = opts;
  for (const name of names) {
    at = (at[name] ??= {}) as Record<string, unknown>;
  }
  at[last] = value;
}

/**
 * How to start the server: the binary, and its environment with the API key
 * when one is stored. The binary: agentLsp.path when the user set it, else
 * the one bundled in a platform .vsix (bundled, when present), else
 * agent-lsp on PATH.
 */
export function serverExecutable(s: Settings, apiKey: string | undefined, env: NodeJS.ProcessEnv, bundled?: string): { command: string; args: string[]; options: { env: NodeJS.ProcessEnv } } {
  const child: NodeJS.ProcessEnv = { ...env };
  if (apiKey) {
    child["OPENAI_API_KEY"] = apiKey;
  }
  const command = s.path === defaultSettings.path && bundled ? bundled : expandHome(s.path);
  return { command, args: [], options: { env: child } };
}

/** The binary a platform .vsix carries (npm run package:platform puts it in bin/), or undefined when this one has none. */
export function bundledBinary(extensionPath: string, platform: NodeJS.Platform): string | undefined {
  const p = path.join(extensionPath, "bin", platform === "win32" ? "agent-lsp.exe" : "agent-lsp");
  return findExecutable(p, {}) ? p : undefined;
}

function expandHome(p: string): string {
  if (p === "~" || p.startsWith("~/")) {
    return path.join(os.homedir(), p.slice(1));
  }
  return p;
}

/** The executable command resolves to (a path, or a name looked up on PATH), or undefined. */
export function findExecutable(command: string, env: NodeJS.ProcessEnv): string | undefined {
  const ok = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes("/") || command.includes(path.sep)) {
    return ok(command) ? command : undefined;
  }
  const exts = process.platform === "win32" ? (env["PATHEXT"] ?? ".EXE").split(";") : [""];
  for (const dir of (env["PATH"] ?? "").split(path.delimiter)) {
    for (const ext of exts) {
      const p = path.join(dir || ".", command + ext);
      if (dir && ok(p)) {
        return p;
      }
    }
  }
  return undefined;
}
