// The language client: starts agent-lsp for the whole window with the
// settings and the stored API key, once the workspace is trusted and a command
// first needs it (the binary found by locate.ts); sends it settings changes
// (workspace/didChangeConfiguration), restarts it, and adapts it to the typed
// AgentServer port the commands use. It saves the
// agent's edits before its commands (save.ts) and hands edits that need
// confirmation to the review (review.ts). It knows the versions Agent: About
// reports (about.ts).
import * as vscode from "vscode";
import { DidChangeConfigurationNotification, ExecuteCommandRequest, LanguageClient, type LanguageClientOptions, RevealOutputChannelOn, WorkDoneProgress, type WorkspaceMiddleware } from "vscode-languageclient/node";
import { aboutReport, binaryVersion, type AboutInfo } from "./about";
import { apiKeySecret, bundledBinary, initializationOptions, type SettingProblem, type Settings } from "./config";
import { languageForAgent } from "./language";
import { locateServer } from "./locate";
import type { AgentServer, Client } from "./ctx";
import type { WireEvent } from "./protocol";
import { didSave, saveForAgent } from "./save";

export class AgentClient implements Client, vscode.Disposable {
  private client: LanguageClient | undefined;
  private adapter: AgentServer | undefined;
  private starting: Promise<void> | undefined;
  /** The binary the running server was started from. */
  private command: string | undefined;
  private log = vscode.window.createOutputChannel("agent-lsp server", { log: true });

  constructor(
    private context: vscode.ExtensionContext,
    private settings: (problems?: SettingProblem[]) => Settings,
    private onEvent: (ev: WireEvent) => void,
    /** Appends a line to the transcript: what was saved for a command. */
    private note: (line: string) => void,
    /** Handles workspace/applyEdit: the review of edits that need confirmation (review.ts). */
    private review: NonNullable<WorkspaceMiddleware["handleApplyEdit"]>,
  ) {}

  server(): AgentServer | undefined {
    return this.adapter;
  }

  /** Starts the server unless it is starting already or the workspace is not trusted; a failure is shown, not thrown. */
  async start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      this.log.info("Restricted Mode: agent-lsp starts once the workspace is trusted");
      return;
    }
    const found = await this.findServer();
    if (!found.ok) {
      const exe = found.exe;
      this.startFailed(`\`${exe.command}\` was not found${exe.command.includes("/") ? "" : " on PATH"}. Install agent-lsp or set agentLsp.path.`);
      return;
    }
    const { settings, exe } = found;
    this.showProblems(found.problems);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      initializationOptions: initializationOptions(settings),
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: { workspace: { handleApplyEdit: this.review }, didSave },
    };
    const client = new LanguageClient("agentLsp", "agent-lsp", exe, clientOptions);
    client.onNotification("agent/event", (ev: WireEvent) => this.onEvent(ev));
    saveForAgent(client, () => this.settings().saveBeforeCommands, this.note);
    languageForAgent(client); // the agent sees what VS Code's language servers see
    try {
      await client.start();
    } catch (e) {
      // E.g. a setting the server refuses: initialize fails naming it.
      this.startFailed(e instanceof Error ? e.message : String(e), "agentLsp");
      return;
    }
    this.client = client;
    this.adapter = agentServer(client);
    this.command = exe.command;
    const about = aboutReport(this.runningAbout(client, exe.command));
    this.log.info(about.text);
    if (about.warning) {
      this.log.warn(about.warning);
    }
  }

  /** The extension's version and the server's: the running one's (initialize's serverInfo), else the located binary's `--version`. */
  async about(): Promise<AboutInfo> {
    const c = this.client;
    if (c && this.command) {
      return this.runningAbout(c, this.command);
    }
    const extension = this.extensionVersion();
    const found = await this.findServer(0);
    if (!found.ok) {
      return { extension };
    }
    const v = await binaryVersion(found.exe.command, found.exe.options.env);
    return { extension, server: { command: found.exe.command, running: false, ...v } };
  }

  private runningAbout(c: LanguageClient, command: string): AboutInfo {
    return { extension: this.extensionVersion(), server: { command, version: c.initializeResult?.serverInfo?.version, running: true } };
  }

  private extensionVersion(): string {
    return String((this.context.extension.packageJSON as { version?: unknown }).version);
  }

  /** The settings and the binary to start (locate.ts): read now, and again while the configuration settles. */
  private async findServer(settleMs = 5000) {
    return locateServer({
      read: () => {
        const problems: SettingProblem[] = [];
        return { settings: this.settings(problems), problems };
      },
      apiKey: await this.context.secrets.get(apiKeySecret),
      env: process.env,
      bundled: bundledBinary(this.context.extensionPath, process.platform),
      settled: () => settled(500),
      settleMs,
      log: (line) => this.log.info(line),
    });
  }

  /** Logs and shows the setting values left out. */
  private showProblems(problems: SettingProblem[]): void {
    for (const p of problems) {
      this.log.warn(p.message);
      this.offerSettings(p.message, p.setting);
    }
  }

  /** Sends the settings to the running server, which applies them to its next runs; nothing when it is not running (it reads them when it starts). */
  async configure(): Promise<void> {
    const c = this.client;
    if (!c) {
      return;
    }
    const problems: SettingProblem[] = [];
    const settings = initializationOptions(this.settings(problems));
    this.showProblems(problems);
    // The server answers settings it refuses with window/showMessage, which the client shows.
    await c.sendNotification(DidChangeConfigurationNotification.type, { settings });
  }

  /** Shows why the server did not start, offering the settings that query finds. */
  private startFailed(why: string, query = "agentLsp.path"): void {
    this.offerSettings(`agent-lsp could not start: ${why}`, query, "error");
  }

  /** Shows message with a button that opens the settings query finds. */
  private offerSettings(message: string, query: string, level: "warning" | "error" = "warning"): void {
    const open = "Open Settings";
    const shown = level === "error" ? vscode.window.showErrorMessage(message, open) : vscode.window.showWarningMessage(message, open);
    void shown.then((pick) => {
      if (pick === open) {
        void vscode.commands.executeCommand("workbench.action.openSettings", query);
      }
    });
  }

  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    this.adapter = undefined;
    this.command = undefined;
    if (c) {
      try {
        await c.stop(5000);
      } catch {
        // the server is gone already
      }
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async setApiKey(key: string): Promise<void> {
    if (key) {
      await this.context.secrets.store(apiKeySecret, key);
    } else {
      await this.context.secrets.delete(apiKeySecret);
    }
    await this.restart();
  }

  dispose(): void {
    void this.stop();
    this.log.dispose();
  }
}

/** Resolves at the next configuration change, or after ms. */
function settled(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      sub.dispose();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const sub = vscode.workspace.onDidChangeConfiguration(done);
  });
}

/** The typed port over client: each request is one workspace/executeCommand with one argument object. */
function agentServer(client: LanguageClient): AgentServer {
  return {
    send: (req, args, opts) => client.sendRequest(ExecuteCommandRequest.type, { command: req.command, arguments: [args], ...(opts?.workDoneToken && { workDoneToken: opts.workDoneToken }) }, opts?.token),
    onProgress: (token, handler) => client.onProgress(WorkDoneProgress.type, token, handler),
  };
}
