// The context every command works in: the server, the "Agent" output channel
// with the live transcript, the runs of this window, the session and project
// the next command refers to, and the settings. Commands reach the server only
// through the typed AgentServer port, so tests drive them with a fake server.
import * as vscode from "vscode";
import type { AboutInfo } from "./about";
import type { Settings } from "./config";
import { EventFormatter } from "./format";
import { ModeChoice } from "./modes";
import { memoryState, ModelChoice } from "./models";
import { isAgentEvent, type AgentEvent, type ProgressValue, type Request, type WireEvent } from "./protocol";
import { Reviews } from "./review";
import { Runs } from "./runs";
import { UsageStatus } from "./usage";

/** A command handler, as vscode.commands.registerCommand takes it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a handler declares the arguments it takes
export type Cmd = (...args: any[]) => unknown;

/** Options of one request: cancellation ($/cancelRequest) and the work-done progress token. */
export interface SendOptions {
  token?: vscode.CancellationToken;
  workDoneToken?: string;
}

/** The running server, typed by the request table. */
export interface AgentServer {
  /** Sends req (workspace/executeCommand) with its one argument object. */
  send<A, R>(req: Request<A, R>, args: NoInfer<A>, opts?: SendOptions): Promise<R>;
  /** Calls handler with the progress reported on token. */
  onProgress(token: string, handler: (value: ProgressValue) => void): vscode.Disposable;
}

/** The server's lifecycle, as the commands control it (client.ts). */
export interface Client {
  /** The server, or undefined while it is not running. */
  server(): AgentServer | undefined;
  /** Starts the server unless it runs; a failure is shown to the user, and server() stays undefined. */
  start(): Promise<void>;
  /** Restarts the server. */
  restart(): Promise<void>;
  /** Sends the settings to the running server (workspace/didChangeConfiguration), for its next runs. */
  configure(): Promise<void>;
  /** Stores (or, with "", deletes) the API key and restarts the server. */
  setApiKey(key: string): Promise<void>;
  /** The extension's version and the server's (Agent: About). */
  about(): Promise<AboutInfo>;
}

export class Ctx implements vscode.Disposable {
  readonly output = vscode.window.createOutputChannel("Agent");
  readonly runs = new Runs();
  readonly usage = new UsageStatus();
  /** The model this workspace picked (Agent: Select Model). */
  readonly models: ModelChoice;
  /** The mode this workspace's runs use (Agent: Select Mode). */
  readonly mode: ModeChoice;
  private events = new vscode.EventEmitter<AgentEvent>();
  /** Every agent/event of a known kind, after the transcript has it (the chat view listens). */
  readonly onAgentEvent = this.events.event;
  /** The agent edits under review (the client's workspace/applyEdit middleware). */
  readonly reviews = new Reviews((line) => this.output.appendLine(line), this.onAgentEvent, this.runs.onIdle);
  /** The session of the latest run, which Switch Project moves. */
  lastSession: string | undefined;
  /** The project picked with Switch Project, for new runs. */
  chosenProject: string | undefined;
  private formatter = new EventFormatter();
  private subscriptions: vscode.Disposable[] = [this.output, this.runs, this.usage, this.events, this.reviews];

  constructor(
    readonly client: Client,
    readonly settings: () => Settings,
    /** Where the chosen model is kept: the workspace's state. */
    state: vscode.Memento = memoryState(),
  ) {
    this.models = new ModelChoice(state, () => this.settings().model);
    this.subscriptions.push(this.models);
    this.mode = new ModeChoice(state);
    this.subscriptions.push(this.mode);
  }

  /**
   * The server, started first when it is not running (the server starts when
   * a command first needs it); throws, for the user to read, when it cannot run.
   */
  async ready(): Promise<AgentServer> {
    if (!this.client.server()) {
      await this.client.start();
    }
    return this.server();
  }

  /** The running server; throws, for the user to read, when it is not running. */
  server(): AgentServer {
    const s = this.client.server();
    if (!s) {
      throw new Error(
        vscode.workspace.isTrusted ? "the server is not running; see the agent-lsp output channel, or run Agent: Restart Server" : "the agent starts once you trust this workspace (it runs the project's build and test commands)",
      );
    }
    return s;
  }

  /** Handles an agent/event notification: binds a new run to its session and appends to the transcript. */
  onEvent(ev: WireEvent): void {
    if (!isAgentEvent(ev)) {
      return; // a kind newer than this extension: the contract says to ignore it
    }
    if (ev.type === "run.start" && ev.session) {
      this.runs.started(ev.session);
      this.lastSession = ev.session;
    }
    if (ev.type === "usage") {
      this.usage.record(ev);
    }
    const text = this.formatter.format(ev);
    if (text) {
      this.output.append(text);
    }
    this.events.fire(ev);
  }

  /** Disposes d with the context. */
  pushCleanup(...d: vscode.Disposable[]): void {
    this.subscriptions.push(...d);
  }

  dispose(): void {
    for (const d of this.subscriptions.splice(0)) {
      d.dispose();
    }
  }
}
