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
};

/** The settings the server reads when it starts: all but the edit mode, which every run sends. A change restarts it. */
export const serverSettings = (Object.keys(defaultSettings) as (keyof Settings)[]).filter((k) => k !== "edits");

/** Reads settings through get (a WorkspaceConfiguration's get), filling defaults. */
export function readSettings(get: <T>(key: string) => T | undefined): Settings {
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
  return s;
}

/**
 * The server's initializationOptions for these settings; never carries the API key.
 * scrubEnv replaces the server's default list, so it goes only when set.
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
  if (s.storePath) {
    opts.store = { path: expandHome(s.storePath) };
  }
  return opts;
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
