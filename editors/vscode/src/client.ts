// The language client: starts agent-lsp for the whole window with the
// settings and the stored API key, once the workspace is trusted; restarts it,
// and adapts it to the typed AgentServer port the commands use. It saves the
// agent's edits before its commands (save.ts) and shows edits waiting for
// review (review.ts).
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  WorkDoneProgress,
} from "vscode-languageclient/node";
import { apiKeySecret, findExecutable, initializationOptions, serverExecutable, type SettingProblem, type Settings } from "./config";
import type { AgentServer, Client } from "./ctx";
import type { WireEvent } from "./protocol";
import { showReviews } from "./review";
import { saveForAgent } from "./save";

export class AgentClient implements Client, vscode.Disposable {
  private client: LanguageClient | undefined;
  private adapter: AgentServer | undefined;
  private starting: Promise<void> | undefined;
  private log = vscode.window.createOutputChannel("agent-lsp server", { log: true });

  constructor(
    private context: vscode.ExtensionContext,
    private settings: (problems?: SettingProblem[]) => Settings,
    private onEvent: (ev: WireEvent) => void,
    /** Appends a line to the transcript: what was saved for a command, an edit waiting for review. */
    private note: (line: string) => void,
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
    const problems: SettingProblem[] = [];
    const settings = this.settings(problems);
    for (const p of problems) {
      this.log.warn(p.message);
      this.offerSettings(p.message, p.setting);
    }
    const apiKey = await this.context.secrets.get(apiKeySecret);
    const exe = serverExecutable(settings, apiKey, process.env);
    if (!findExecutable(exe.command, process.env)) {
      this.startFailed(`\`${exe.command}\` was not found${exe.command.includes("/") ? "" : " on PATH"}. Install agent-lsp or set agentLsp.path.`);
      return;
    }
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      initializationOptions: initializationOptions(settings),
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: { workspace: { handleApplyEdit: showReviews(this.note) } },
    };
    const client = new LanguageClient("agentLsp", "agent-lsp", exe, clientOptions);
    client.onNotification("agent/event", (ev: WireEvent) => this.onEvent(ev));
    saveForAgent(client, () => this.settings().saveBeforeCommands, this.note);
    try {
      await client.start();
    } catch (e) {
      // E.g. a setting the server refuses: initialize fails naming it.
      this.startFailed(e instanceof Error ? e.message : String(e), "agentLsp");
      return;
    }
    this.client = client;
    this.adapter = agentServer(client);
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

/** The typed port over client: each request is one workspace/executeCommand with one argument object. */
function agentServer(client: LanguageClient): AgentServer {
  return {
    send: (req, args, opts) =>
      client.sendRequest(
        ExecuteCommandRequest.type,
        { command: req.command, arguments: [args], ...(opts?.workDoneToken && { workDoneToken: opts.workDoneToken }) },
        opts?.token,
      ),
    onProgress: (token, handler) => client.onProgress(WorkDoneProgress.type, token, handler),
  };
}
