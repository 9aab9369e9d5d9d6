// Finding the server binary when a command first needs it. In a remote
// window (code-server) the machine settings that name the binary may load
// after the extension activates: read too early, agentLsp.path still has its
// default, and "agent-lsp was not found on PATH" although the setting names
// it. So the settings are read when the server is needed, and when the binary
// is not found they are read again after each configuration change (or a
// short wait) until settleMs have passed. No vscode import.
import { findExecutable, serverExecutable, type SettingProblem, type Settings } from "./config";

export interface Locate {
  /** Reads the settings as they are now. */
  read(): { settings: Settings; problems: SettingProblem[] };
  apiKey: string | undefined;
  env: NodeJS.ProcessEnv;
  /** The binary of a platform .vsix, when it carries one. */
  bundled?: string | undefined;
  /** Resolves at the next configuration change, or after a short wait. */
  settled(): Promise<void>;
  /** How long to wait for the settings to settle before giving up. */
  settleMs: number;
  now?: () => number;
  log?: (line: string) => void;
}

export type Located = { ok: true; settings: Settings; problems: SettingProblem[]; exe: ReturnType<typeof serverExecutable> } | { ok: false; exe: ReturnType<typeof serverExecutable> };

/** The settings and the binary to start, or, once the settings have settled without one, the command that was not found. */
export async function locateServer(o: Locate): Promise<Located> {
  const now = o.now ?? Date.now;
  const until = now() + o.settleMs;
  for (;;) {
    const { settings, problems } = o.read();
    const exe = serverExecutable(settings, o.apiKey, o.env, o.bundled);
    if (findExecutable(exe.command, o.env)) {
      return { ok: true, settings, problems, exe };
    }
    if (now() >= until) {
      return { ok: false, exe };
    }
    o.log?.(`${exe.command} not found; reading the settings again once they settle`);
    await o.settled();
  }
}
