// Agent: About: the extension's version and the server's, and whether they
// agree. The extension, the server and the Neovim plugin carry one version,
// the repository's VERSION (a platform .vsix bundles a server stamped with
// it); a server found elsewhere (agentLsp.path, PATH) may be older or newer.
// No vscode import: the command in commands.ts shows what this composes.
import { execFile } from "node:child_process";

/** What Agent: About reports. */
export interface AboutInfo {
  /** The extension's version (package.json). */
  extension: string;
  /** The server binary the extension starts: its path or name, and its version when known. */
  server?: { command: string; version?: string | undefined; running: boolean; error?: string };
}

/** The report of Agent: About: one line per fact, and a warning when the versions differ or the server is unknown. */
export function aboutReport(a: AboutInfo): { text: string; warning?: string } {
  const ext = `extension ${a.extension}`;
  const s = a.server;
  if (!s) {
    return { text: `agent-lsp: ${ext}; the server binary was not found`, warning: "Install agent-lsp or set agentLsp.path." };
  }
  if (!s.version) {
    const why = s.error ? `: ${s.error}` : "";
    return { text: `agent-lsp: ${ext}; the server ${s.command} did not tell its version${why}`, warning: "Check agentLsp.path." };
  }
  const text = `agent-lsp: ${ext}, server ${s.version} (${s.command}${s.running ? ", running" : ""})`;
  if (s.version !== a.extension) {
    return {
      text,
      warning: `The server is not the extension's version ${a.extension}: install the server of the same version (go install ./cmd/agent-lsp from the same checkout), use the platform package that carries it, or set agentLsp.path.`,
    };
  }
  return { text };
}

/** The version in `agent-lsp --version`'s output ("agent-lsp 0.2.0 (go1.26 linux/amd64)"), or undefined. */
export function parseVersion(out: string): string | undefined {
  return /^agent-lsp (\S+)/.exec(out.trim())?.[1];
}

/** Runs `command --version` (5 s at most) and returns its version, or the reason it has none. */
export function binaryVersion(command: string, env: NodeJS.ProcessEnv): Promise<{ version?: string; error?: string }> {
  return new Promise((resolve) => {
    execFile(command, ["--version"], { env, timeout: 5000 }, (err, stdout) => {
      const version = parseVersion(stdout);
      resolve(version ? { version } : { error: err ? err.message : `it printed ${JSON.stringify(stdout.slice(0, 80))}` });
    });
  });
}
