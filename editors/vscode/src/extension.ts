// Entry point: starts agent-lsp for the whole window through vscode-languageclient
// and hands its notifications to the Controller.
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  WorkDoneProgress,
} from "vscode-languageclient/node";
import { apiKeySecret, findExecutable, initializationOptions, readSettings, serverExecutable, type Settings } from "./config";
import { type AgentServer, Controller, type Host } from "./controller";
import type { AgentEvent } from "./protocol";

let extension: Extension | undefined;

/** Activates the extension: one agent-lsp server per window. */
export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extension = new Extension(context);
  context.subscriptions.push(extension);
  await extension.start();
}

/** Stops the server. */
export async function deactivate(): Promise<void> {
  await extension?.stop();
  extension = undefined;
}

class Extension implements Host, vscode.Disposable {
  private client: LanguageClient | undefined;
  private adapter: AgentServer | undefined;
  private controller: Controller;
  private serverLog: vscode.LogOutputChannel;
  private starting: Promise<void> | undefined;

  constructor(private context: vscode.ExtensionContext) {
    this.serverLog = vscode.window.createOutputChannel("agent-lsp server", { log: true });
    this.controller = new Controller(this, vscode.window.createOutputChannel("Agent"));
    context.subscriptions.push(this.serverLog, this.controller.output, this.controller);
    this.controller.register();
    context.subscriptions.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("agentLsp.edits")) {
          const review = this.edits() === "review";
          vscode.window.setStatusBarMessage(
            review ? "agent: edits now open in the refactor preview first" : "agent: edits now apply directly",
            8000,
          );
        } else if (e.affectsConfiguration("agentLsp")) {
          void this.settingsChanged();
        }
      }),
    );
  }

  private settings(): Settings {
    const cfg = vscode.workspace.getConfiguration("agentLsp");
    return readSettings((key) => cfg.get(key));
  }

  edits(): "apply" | "review" {
    return this.settings().edits;
  }

  server(): AgentServer | undefined {
    return this.adapter;
  }

  async start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const settings = this.settings();
    const apiKey = await this.context.secrets.get(apiKeySecret);
    const exe = serverExecutable(settings, apiKey, process.env);
    if (!findExecutable(exe.command, process.env)) {
      this.startFailed(`\`${exe.command}\` was not found${exe.command.includes("/") ? "" : " on PATH"}. Install agent-lsp or set agentLsp.path.`);
      return;
    }
    const serverOptions: ServerOptions = exe;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      initializationOptions: initializationOptions(settings),
      outputChannel: this.serverLog,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
    };
    const client = new LanguageClient("agentLsp", "agent-lsp", serverOptions, clientOptions);
    client.onNotification("agent/event", (ev: AgentEvent) => this.controller.onEvent(ev));
    try {
      await client.start();
    } catch (e) {
      this.startFailed(e instanceof Error ? e.message : String(e));
      return;
    }
    this.client = client;
    this.adapter = {
      execute: <T>(command: string, args: object, opts?: { token?: vscode.CancellationToken; workDoneToken?: string }) =>
        client.sendRequest(
          ExecuteCommandRequest.type,
          { command, arguments: [args], ...(opts?.workDoneToken && { workDoneToken: opts.workDoneToken }) },
          opts?.token,
        ) as Promise<T>,
      onProgress: (token, handler) => client.onProgress(WorkDoneProgress.type, token, handler),
    };
  }

  private startFailed(why: string): void {
    const open = "Open Settings";
    void vscode.window.showErrorMessage(`agent-lsp could not start: ${why}`, open).then((pick) => {
      if (pick === open) {
        void vscode.commands.executeCommand("workbench.action.openSettings", "agentLsp.path");
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

  private async settingsChanged(): Promise<void> {
    if (!this.controller.busy()) {
      await this.restart();
      return;
    }
    const pick = await vscode.window.showInformationMessage(
      "agent-lsp settings changed. Restart the server now? The running agent is stopped and can be resumed.",
      "Restart",
    );
    if (pick === "Restart") {
      await this.restart();
    }
  }

  dispose(): void {
    void this.stop();
  }
}
