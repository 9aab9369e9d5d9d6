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
}

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
};

/**
 * The settings the extension reads each time it needs them, so a change
 * applies at once: the edit mode, which every run sends, and saving before
 * commands, which each agent/saveDocuments reads.
 */
const readEachTime: readonly (keyof Settings)[] = ["edits", "saveBeforeCommands"];

/** The settings the server reads when it starts. A change restarts it. */
export const serverSettings = (Object.keys(defaultSettings) as (keyof Settings)[]).filter((k) => !readEachTime.includes(k));

type TuningKey = "contextTokens" | "window" | "toolOutput" | "readOnlySubagents";

/** A setting that goes to the server as it is: its initializationOptions key, and for an integer its range. */
interface Tuning {
  init: string;
  range?: readonly [number, number];
}

/**
 * How much of the conversation the model sees and what subagents may do, by
 * setting: the initializationOptions key and range of docs/protocol.md's
 * settings table (package.json declares the same ranges). Unset (null, false):
 * not sent, so that the server's environment (AGENT_LSP_CONTEXT_TOKENS, ...)
 * and defaults apply.
 */
export const tuning: Record<TuningKey, Tuning> = {
  contextTokens: { init: "model.contextTokens", range: [1024, 10_000_000] },
  window: { init: "window", range: [10, 1000] },
  toolOutput: { init: "toolOutput", range: [1024, 1_048_576] },
  readOnlySubagents: { init: "subagents.readOnly" },
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
    opts.scrubEnv = s.scrubEnv;
  }
  if (s.model || s.baseURL) {
    opts.model = { ...(s.model && { model: s.model }), ...(s.baseURL && { baseURL: s.baseURL }) };
  }
  for (const [key, t] of Object.entries(tuning) as [TuningKey, Tuning][]) {
    if (s[key] !== null && s[key] !== false) {
      put(opts, t.init, s[key]);
    }
  }
  if (s.storePath) {
    opts.store = { path: expandHome(s.storePath) };
  }
  return opts;
}

/** Sets the dotted key (e.g. model.contextTokens) of opts to value, adding the objects on its way. */
function put(opts: Record<string, unknown>, key: string, value: unknown): void {
  const names = key.split(".");
  let at = opts;
  for (const name of names.slice(0, -1)) {
    at = (at[name] ??= {}) as Record<string, unknown>;
  }
  at[names[names.length - 1]] = value;
}

/** How to start the server: the binary, and its environment with the API key when one is stored. */
export function serverExecutable(
  s: Settings,
  apiKey: string | undefined,
  env: NodeJS.ProcessEnv,
): { command: string; args: string[]; options: { env: NodeJS.ProcessEnv } } {
  const child: NodeJS.ProcessEnv = { ...env };
  if (apiKey) {
    child.OPENAI_API_KEY = apiKey;
  }
  return { command: expandHome(s.path), args: [], options: { env: child } };
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
  const exts = process.platform === "win32" ? (env.PATHEXT ?? ".EXE").split(";") : [""];
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    for (const ext of exts) {
      const p = path.join(dir || ".", command + ext);
      if (dir && ok(p)) {
        return p;
      }
    }
  }
  return undefined;
}
