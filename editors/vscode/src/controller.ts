// The extension's commands, status bar, transcript output, code action and
// session documents. It talks to the server through the small AgentServer port,
// so tests drive it with a fake server and a stubbed vscode API.
import * as vscode from "vscode";
import { EventFormatter, projectItem, sessionItem, summary, transcript } from "./format";
import type { AgentEvent, ProjectInfo, RunArgs, RunResult, SessionDetail, SessionInfo } from "./protocol";
import { ServerCommand } from "./protocol";

/** A work-done progress value from the server. */
export interface ProgressValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
}

/** What the controller needs from the language client. */
export interface AgentServer {
  /** Sends workspace/executeCommand with one argument object. */
  execute<T>(command: string, args: object, opts?: { token?: vscode.CancellationToken; workDoneToken?: string }): Promise<T>;
  /** Calls handler with the progress reported on token. */
  onProgress(token: string, handler: (value: ProgressValue) => void): vscode.Disposable;
}

/** The extension's commands; package.json contributes exactly these. */
export const Command = {
  run: "agentLsp.run",
  resume: "agentLsp.resume",
  showSession: "agentLsp.showSession",
  cancel: "agentLsp.cancel",
  switchProject: "agentLsp.switchProject",
  deleteSession: "agentLsp.deleteSession",
  setApiKey: "agentLsp.setApiKey",
  showOutput: "agentLsp.showOutput",
  restart: "agentLsp.restart",
  askAboutSelection: "agentLsp.askAboutSelection",
} as const;

/** The URI scheme of the read-only session transcripts. */
export const sessionScheme = "agent-session";

/** A run started from this window. */
interface Run {
  token: string;
  title: string;
  session?: string;
  message?: string;
  source: vscode.CancellationTokenSource;
}

/** Hooks the controller calls into the extension for what it does not own. */
export interface Host {
  /** The server, or undefined while it is not running. */
  server(): AgentServer | undefined;
  /** Edit mode for new runs. */
  edits(): "apply" | "review";
  /** Stores (or, with "", deletes) the API key and restarts the server. */
  setApiKey(key: string): Promise<void>;
  /** Restarts the server. */
  restart(): Promise<void>;
}

/** Controller owns the UI of agent runs in one window. */
export class Controller implements vscode.Disposable {
  private runs = new Map<string, Run>();
  private next = 0;
  private lastSession: string | undefined;
  private chosenProject: string | undefined;
  private formatter = new EventFormatter();
  private status: vscode.StatusBarItem;
  private disposables: vscode.Disposable[] = [];
  private sessionDocs = new vscode.EventEmitter<vscode.Uri>();

  constructor(
    private host: Host,
    readonly output: vscode.OutputChannel,
  ) {
    this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
    this.status.command = Command.showOutput;
    this.disposables.push(this.status, this.sessionDocs);
  }

  /** Registers the commands, the code action and the session document provider until dispose. */
  register(): void {
    const reg = (id: string, fn: (...args: any[]) => unknown) =>
      vscode.commands.registerCommand(id, async (...args: any[]) => {
        try {
          return await fn(...args);
        } catch (e) {
          void vscode.window.showErrorMessage(`agent-lsp: ${errorText(e)}`);
        }
      });
    const d = [
      reg(Command.run, () => this.runCommand()),
      reg(Command.askAboutSelection, (uri?: vscode.Uri, range?: vscode.Range) => this.askAboutSelection(uri, range)),
      reg(Command.resume, (session?: string) => this.resume(session)),
      reg(Command.showSession, (session?: string) => this.showSession(session)),
      reg(Command.cancel, () => this.cancel()),
      reg(Command.switchProject, () => this.switchProject()),
      reg(Command.deleteSession, () => this.deleteSession()),
      reg(Command.setApiKey, () => this.setApiKey()),
      reg(Command.showOutput, () => this.output.show(true)),
      reg(Command.restart, () => this.host.restart()),
      vscode.languages.registerCodeActionsProvider(
        [{ scheme: "file" }, { scheme: "untitled" }],
        { provideCodeActions: (doc, range) => this.codeActions(doc, range) },
        { providedCodeActionKinds: [codeActionKind()] },
      ),
      vscode.workspace.registerTextDocumentContentProvider(sessionScheme, {
        onDidChange: this.sessionDocs.event,
        provideTextDocumentContent: (uri) => this.sessionMarkdown(uri),
      }),
    ];
    this.disposables.push(...d);
  }

  /** Handles an agent/event notification. */
  onEvent(ev: AgentEvent): void {
    if (ev.type === "run.start" && ev.session) {
      const known = [...this.runs.values()].some((r) => r.session === ev.session);
      const waiting = [...this.runs.values()].find((r) => r.session === undefined);
      if (!known && waiting) {
        waiting.session = ev.session;
      }
      this.lastSession = ev.session;
    }
    const text = this.formatter.format(ev);
    if (text) {
      this.output.append(text);
    }
  }

  /** True while a run started here is going. */
  busy(): boolean {
    return this.runs.size > 0;
  }

  private server(): AgentServer {
    const s = this.host.server();
    if (!s) {
      throw new Error("the server is not running; see the agent-lsp output channel, or run Agent: Restart Server");
    }
    return s;
  }

  private async runCommand(): Promise<RunResult | undefined> {
    const editor = vscode.window.activeTextEditor;
    const sel = editor && !editor.selection.isEmpty ? editor.selection : undefined;
    const where = sel && editor ? ` about ${vscode.workspace.asRelativePath(editor.document.uri)} lines ${sel.start.line + 1}-${sel.end.line + 1}` : "";
    const prompt = await vscode.window.showInputBox({
      title: "Agent: Run",
      prompt: `What should the agent do${where}?`,
      placeHolder: "e.g. Add a unit test for this function",
      ignoreFocusOut: true,
    });
    if (!prompt?.trim()) {
      return undefined;
    }
    const args: RunArgs = { prompt: prompt.trim() };
    if (sel && editor) {
      args.uri = editor.document.uri.toString();
      args.range = toRange(sel);
    }
    return this.start(ServerCommand.run, args, prompt);
  }

  private async askAboutSelection(uri?: vscode.Uri, range?: vscode.Range): Promise<RunResult | undefined> {
    const editor = vscode.window.activeTextEditor;
    uri ??= editor?.document.uri;
    range ??= editor?.selection;
    if (!uri || !range) {
      void vscode.window.showInformationMessage("Select some code first, then ask the agent about it.");
      return undefined;
    }
    const prompt = await vscode.window.showInputBox({
      title: "Ask agent about this selection",
      prompt: `${vscode.workspace.asRelativePath(uri)} lines ${range.start.line + 1}-${range.end.line + 1}`,
      placeHolder: "e.g. Why can this return nil?",
      ignoreFocusOut: true,
    });
    if (!prompt?.trim()) {
      return undefined;
    }
    return this.start(ServerCommand.run, { prompt: prompt.trim(), uri: uri.toString(), range: toRange(range) }, prompt);
  }

  private async resume(session?: string): Promise<RunResult | undefined> {
    session ??= await this.pickSession("Resume which session?", (s) => s.status !== "done");
    if (!session) {
      return undefined;
    }
    return this.start(ServerCommand.resume, { session }, `resume ${session}`);
  }

  /** start runs agent.run or agent.resume with a cancellable progress notification. */
  private async start(command: string, args: RunArgs | { session: string }, prompt: string): Promise<RunResult | undefined> {
    const server = this.server();
    const full: Record<string, unknown> = { ...args, edits: this.host.edits() };
    if (command === ServerCommand.run && !full.session) {
      full.project ??= this.chosenProject ?? (await this.projectOf(server, args as RunArgs));
    }
    const token = `agent-lsp-vscode:${++this.next}`;
    const title = `agent: ${firstWords(prompt, 6)}`;
    const run: Run = { token, title, session: (args as { session?: string }).session, source: new vscode.CancellationTokenSource() };
    this.runs.set(token, run);
    this.updateStatus();
    this.output.appendLine(`▶ ${prompt}`);
    try {
      return await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title, cancellable: true },
        async (progress, cancelled) => {
          const sub = server.onProgress(token, (v) => {
            if (v.kind === "report" && v.message) {
              run.message = v.message;
              progress.report({ message: v.message });
              this.updateStatus();
            }
          });
          const onCancel = cancelled.onCancellationRequested(() => void this.cancelRun(run));
          try {
            const result = await server.execute<RunResult>(command, full, { token: run.source.token, workDoneToken: token });
            this.lastSession = result.session;
            void this.report(result);
            return result;
          } catch (e) {
            if (isCancelled(e)) {
              void vscode.window.showInformationMessage("Agent cancelled.");
              return undefined;
            }
            throw e;
          } finally {
            sub.dispose();
            onCancel.dispose();
          }
        },
      );
    } finally {
      this.runs.delete(token);
      run.source.dispose();
      this.updateStatus();
    }
  }

  private async report(r: RunResult): Promise<void> {
    const text = summary(r);
    const show = "Show Session";
    const pick =
      r.status === "done" || r.status === "cancelled"
        ? await vscode.window.showInformationMessage(text, show)
        : await vscode.window.showWarningMessage(text, show, "Resume");
    if (pick === show) {
      await this.showSession(r.session);
    } else if (pick === "Resume") {
      await this.resume(r.session);
    }
  }

  /** The project of the active file, so a multi-root window runs where the user is. */
  private async projectOf(server: AgentServer, args: RunArgs): Promise<string | undefined> {
    const uri = args.uri ? vscode.Uri.parse(args.uri) : vscode.window.activeTextEditor?.document.uri;
    if (!uri || uri.scheme !== "file" || (vscode.workspace.workspaceFolders?.length ?? 0) < 2) {
      return undefined;
    }
    const projects = await server.execute<ProjectInfo[]>(ServerCommand.projects, {});
    let best: ProjectInfo | undefined;
    for (const p of projects) {
      const inside = uri.fsPath === p.path || uri.fsPath.startsWith(p.path.endsWith("/") ? p.path : p.path + "/");
      if (inside && (!best || p.path.length > best.path.length)) {
        best = p;
      }
    }
    return best?.name;
  }

  private async cancelRun(run: Run): Promise<void> {
    if (run.session) {
      await this.server().execute(ServerCommand.cancel, { session: run.session });
    } else {
      run.source.cancel(); // sends $/cancelRequest
    }
  }

  private async cancel(): Promise<void> {
    const runs = [...this.runs.values()];
    if (runs.length === 0) {
      void vscode.window.showInformationMessage("No agent run is going in this window.");
      return;
    }
    let run: Run | undefined = runs[0];
    if (runs.length > 1) {
      const pick = await vscode.window.showQuickPick(
        runs.map((r) => ({ label: r.title, description: r.message ?? "", run: r })),
        { title: "Cancel which run?" },
      );
      run = pick?.run;
    }
    if (run) {
      await this.cancelRun(run);
    }
  }

  private async pickSession(title: string, filter?: (s: SessionInfo) => boolean): Promise<string | undefined> {
    const all = await this.server().execute<SessionInfo[]>(ServerCommand.sessions, {});
    const list = filter ? all.filter(filter) : all;
    if (list.length === 0) {
      void vscode.window.showInformationMessage(all.length === 0 ? "No agent sessions yet." : "No session to choose from.");
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(
      list.map((s) => ({ ...sessionItem(s), session: s.session })),
      { title, matchOnDescription: true, matchOnDetail: true },
    );
    return pick?.session;
  }

  private async showSession(session?: string): Promise<void> {
    session ??= await this.pickSession("Show which session?");
    if (!session) {
      return;
    }
    const uri = vscode.Uri.from({ scheme: sessionScheme, path: `/${session}.md` });
    this.sessionDocs.fire(uri); // refresh an open transcript
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, "markdown");
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private async sessionMarkdown(uri: vscode.Uri): Promise<string> {
    const session = uri.path.replace(/^\//, "").replace(/\.md$/, "");
    try {
      const d = await this.server().execute<SessionDetail>(ServerCommand.session, { session });
      return transcript(d);
    } catch (e) {
      return `# Session ${session}\n\nCould not load it: ${errorText(e)}\n`;
    }
  }

  private async switchProject(): Promise<void> {
    const projects = await this.server().execute<ProjectInfo[]>(ServerCommand.projects, {});
    const pick = await vscode.window.showQuickPick(
      projects.map((p) => ({ ...projectItem(p), name: p.name })),
      { title: this.lastSession ? `Switch session ${this.lastSession} to project` : "Run the next session in project" },
    );
    if (!pick) {
      return;
    }
    this.chosenProject = pick.name;
    if (this.lastSession) {
      const r = await this.server().execute<{ session: string; project: string }>(ServerCommand.switchProject, {
        session: this.lastSession,
        project: pick.name,
      });
      void vscode.window.showInformationMessage(`Session ${r.session} now works on project ${r.project}.`);
    } else {
      void vscode.window.showInformationMessage(`The next agent run uses project ${pick.name}.`);
    }
  }

  private async deleteSession(): Promise<void> {
    const session = await this.pickSession("Delete which session?", (s) => s.status !== "running");
    if (!session) {
      return;
    }
    const ok = await vscode.window.showWarningMessage(`Delete session ${session}? Its transcript and checkpoints are removed.`, { modal: true }, "Delete");
    if (ok !== "Delete") {
      return;
    }
    const r = await this.server().execute<{ deleted: boolean }>(ServerCommand.deleteSession, { session });
    if (this.lastSession === session) {
      this.lastSession = undefined;
    }
    void vscode.window.showInformationMessage(r.deleted ? `Deleted session ${session}.` : `Session ${session} was already gone.`);
  }

  private async setApiKey(): Promise<void> {
    const key = await vscode.window.showInputBox({
      title: "Agent: Set API Key",
      prompt: "API key for the model endpoint; kept in VS Code's secret storage. Leave empty to remove it.",
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) {
      return;
    }
    await this.host.setApiKey(key.trim());
    void vscode.window.showInformationMessage(key.trim() ? "API key saved; the agent server restarted with it." : "API key removed.");
  }

  private codeActions(doc: vscode.TextDocument, range: vscode.Range | vscode.Selection): vscode.CodeAction[] {
    if (range.isEmpty) {
      return [];
    }
    const action = new vscode.CodeAction("Ask agent about this selection", codeActionKind());
    action.command = { command: Command.askAboutSelection, title: "Ask agent about this selection", arguments: [doc.uri, range] };
    return [action];
  }

  private updateStatus(): void {
    const runs = [...this.runs.values()];
    if (runs.length === 0) {
      this.status.hide();
      return;
    }
    const latest = runs[runs.length - 1];
    const more = runs.length > 1 ? ` (+${runs.length - 1})` : "";
    this.status.text = `$(loading~spin) ${latest.message ? "agent: " + latest.message : latest.title}${more}`;
    this.status.tooltip = "agent-lsp is working; click for the transcript. Agent: Cancel stops it.";
    this.status.show();
  }

  /** The status bar text, for tests. */
  statusText(): string | undefined {
    return this.runs.size ? this.status.text : undefined;
  }

  dispose(): void {
    for (const r of this.runs.values()) {
      r.source.cancel();
    }
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}

function codeActionKind(): vscode.CodeActionKind {
  return vscode.CodeActionKind.Refactor.append("agent");
}

function toRange(r: vscode.Range): NonNullable<RunArgs["range"]> {
  return { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } };
}

function firstWords(s: string, n: number): string {
  const w = s.trim().split(/\s+/);
  return w.length > n ? w.slice(0, n).join(" ") + "…" : w.join(" ");
}

function isCancelled(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { code?: number }).code === -32800;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : typeof e === "object" && e && "message" in e ? String((e as { message: unknown }).message) : String(e);
}
