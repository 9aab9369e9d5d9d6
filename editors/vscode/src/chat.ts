// The chat view (a webview view, agentLsp.chat): one session's live
// transcript (chatModel.ts), a multi-line input with Send and Stop, and a
// session picker that names sessions by their titles. A prompt starts a new
// session, or follows up in the shown one (queued while its run is going);
// #file, #file:PATH and #selection attach context references (agent.run's
// context: the server reads them as the editor has them, never pasted). Each
// agent edit waiting for review shows with its diff and the review's buttons
// (review.ts). Runs go through launch.ts; the runs the commands start (Agent:
// Run, Ask Agent About This Selection, Follow Up, Resume) show here too, as
// they begin, and a run whose session the chat shows needs no notification.
// The page itself is media/chat.js and media/chat.css.
import * as vscode from "vscode";
import { ChatTranscript, parseRefs, reviewItem, type ChatItem, type RefLabel, type TypedRef } from "./chatModel";
import type { CommandId } from "./commands";
import type { Ctx } from "./ctx";
import { errorText } from "./format";
import { cancelRun, followUpRun, launch, runPrompt } from "./launch";
import { escapeHtml } from "./markdown";
import { PlanOffers, runPlan } from "./plan";
import { ProcessList } from "./processes";
import { requests, type AgentEvent, type ContextRef, type FinishedRun, type ImageRef, type Mode, type RunResult, type SessionInfo } from "./protocol";
import { endpointHtml, fixCommand } from "./reasons";
import { rewindAction, type RewindAction } from "./rewind";
import type { Run } from "./runs";
import { slashCommands, type SlashItem } from "./slash";

/** What the page sends the extension. */
export type FromPage =
  | { type: "ready" }
  | { type: "send"; text: string; images?: ImageRef[] }
  | { type: "stop" }
  | { type: "sessions" }
  | { type: "pick"; session: string }
  | { type: "open"; uri: string }
  | { type: "openPath"; path: string }
  | { type: "review"; action: ReviewAction; id: number; file?: number; key?: string }
  | { type: "commands" }
  | { type: "mode" }
  | { type: "runPlan"; session: string }
  | { type: "stopProcess"; session: string; id: string }
  | { type: "rewind"; action: RewindAction; prompt: number };

/** The review's buttons in the chat: the commands they run (reviewCommands.ts). */
const reviewActions = {
  acceptChange: "agentLsp.acceptChange",
  rejectChange: "agentLsp.rejectChange",
  acceptEdit: "agentLsp.acceptEdit",
  rejectEdit: "agentLsp.rejectEdit",
  acceptAll: "agentLsp.acceptAll",
  rejectAll: "agentLsp.rejectAll",
  showReview: "agentLsp.showReview",
} satisfies Record<string, CommandId>;

export type ReviewAction = keyof typeof reviewActions;

/** What the extension sends the page; title is the shown session's, for the picker (never its id). */
export type ToPage =
  | { type: "reset"; items: ChatItem[]; session: string; title: string }
  | { type: "items"; items: ChatItem[] }
  | { type: "state"; running: boolean; session: string; title: string; mode: Mode }
  | { type: "sessions"; list: { session: string; label: string }[]; current: string; title: string }
  | { type: "commands"; list: SlashItem[] }
  | { type: "processes"; html: string };

/** The part of a webview view the chat uses (a vscode.WebviewView; tests pass a fake). */
export interface ChatWebviewView {
  webview: {
    options: vscode.WebviewOptions;
    html: string;
    cspSource: string;
    asWebviewUri(uri: vscode.Uri): vscode.Uri;
    postMessage(m: ToPage): Thenable<boolean>;
    onDidReceiveMessage(l: (m: FromPage) => unknown): vscode.Disposable;
  };
  /** True while the user can see the view. */
  readonly visible?: boolean;
  onDidDispose(l: () => unknown): vscode.Disposable;
  show?(preserveFocus?: boolean): void;
}

/** The items of an empty chat: a slot for the setup's status line (model, endpoint, key), then how to start. */
export function emptyItems(): ChatItem[] {
  return [
    { id: "empty-status", html: `<div class="empty status"></div>` },
    {
      id: "empty-help",
      html: `<div class="empty note">Ask the agent below: a new session starts. #file, #file:path and #selection attach context; ` + `Agent: Run and Ask Agent About This Selection show their runs here too.</div>`,
    },
  ];
}

/** A session's label in the picker: its title (never its id), its status. */
export function sessionLabel(s: Pick<SessionInfo, "title" | "status" | "updated">): string {
  const when = new Date(s.updated);
  const title = s.title.trim() || `Untitled session${isNaN(when.getTime()) ? "" : ` of ${when.toLocaleString()}`}`;
  return `${title.length > 80 ? title.slice(0, 79) + "…" : title} · ${s.status}`;
}

export class ChatView implements vscode.Disposable {
  static readonly viewId = "agentLsp.chat";
  private view: ChatWebviewView | undefined;
  private transcript = new ChatTranscript();
  /** The shown session's title, for the picker; "" for a new chat. */
  private title = "";
  /** The run the chat shows whose session is not known yet (a new session's). */
  private pending: Run | undefined;
  /** The events of the session being loaded (pick), replayed once its transcript is there. */
  private loading: { session: string; events: AgentEvent[]; results: FinishedRun[] } | undefined;
  private subs: vscode.Disposable[] = [];
  /** The plans the chat offers to run (plan.ts). */
  private plans = new PlanOffers();
  /** The shown session's background processes (processes.ts). */
  private processes: ProcessList;

  constructor(
    private ctx: Ctx,
    /** The extension's folder: the page's script and style are in its media/. */
    private extensionUri: vscode.Uri,
  ) {
    this.processes = new ProcessList(ctx, (html) => this.post({ type: "processes", html }));
    this.subs.push(
      this.processes,
      ctx.onAgentEvent((ev) => this.onEvent(ev)),
      ctx.runs.onIdle(() => this.postState()),
      ctx.mode.onDidChange(() => this.postState()),
      ctx.runs.onBegin((run) => this.adopt(run)),
      // A command's run: its end line gets the result's counts (the chat's own runs add theirs in send).
      ctx.runs.onEnd(({ run, result }) => {
        if (run.fromChat || !result || result.status === "queued") {
          return;
        }
        if (this.loading?.session === result.session) {
          this.loading.results.push(result); // after the session's transcript and the run's events
        } else if (result.session === this.session) {
          this.showResult(result);
        }
      }),
      ctx.runs.onShowInChat((session) => void (session && session !== this.session ? this.pick(session) : undefined)),
      ctx.reviews.onDidChange((r) => this.post({ type: "items", items: [reviewItem(ctx.reviews.card(r))] })),
    );
    ctx.runs.chatShows = (session) => this.view?.visible === true && (this.session === session || this.loading?.session === session);
  }

  /** Registers the view (package.json contributes agentLsp.chat). */
  register(): vscode.Disposable {
    return vscode.window.registerWebviewViewProvider(ChatView.viewId, { resolveWebviewView: (view) => this.resolve(view) }, { webviewOptions: { retainContextWhenHidden: true } });
  }

  /** The session shown, undefined for a new chat. */
  get session(): string | undefined {
    return this.transcript.session;
  }

  /** Shows the page in view and follows its messages. */
  resolve(view: ChatWebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    const asset = (name: string) => view.webview.asWebviewUri(vscode.Uri.joinPath(media, name)).toString();
    view.webview.html = page(view.webview.cspSource, nonce(), asset("chat.css"), asset("chat.js"), asset("slash.js"));
    const sub = view.webview.onDidReceiveMessage((m) => this.onMessage(m));
    view.onDidDispose(() => {
      sub.dispose();
      this.view = undefined;
    });
  }

  /** Handles a message of the page; a failure shows in the chat. */
  async onMessage(m: FromPage): Promise<void> {
    try {
      await this.handlers[m.type](m as never);
    } catch (e) {
      this.post({ type: "items", items: this.transcript.note(errorText(e), "error") });
    }
  }

  /** The page's messages, by type. */
  private handlers: { [T in FromPage["type"]]: (m: Extract<FromPage, { type: T }>) => Promise<void> | void } = {
    ready: () => {
      this.reset();
      void this.listSessions().catch(() => {}); // titles for the picker; the server may not be up yet
    },
    send: (m) => this.send(m.text, m.images),
    stop: () => this.stop(),
    sessions: () => this.listSessions(),
    pick: (m) => this.pick(m.session || undefined),
    open: async (m) => {
      const fix = fixCommand(m.uri); // an empty chat's Set API Key
      await (fix ? vscode.commands.executeCommand(fix) : vscode.window.showTextDocument(vscode.Uri.parse(m.uri), { preview: false }));
    },
    openPath: async (m) => {
      await vscode.window.showTextDocument(await findFile(m.path), { preview: false });
    },
    review: async (m) => {
      const command = Object.hasOwn(reviewActions, m.action) ? reviewActions[m.action] : undefined;
      if (!command) {
        throw new Error(`unknown review action ${JSON.stringify(m.action)}`);
      }
      const args = m.action === "acceptChange" || m.action === "rejectChange" ? [m.id, m.file, m.key] : [m.id];
      await vscode.commands.executeCommand(command, ...args);
    },
    commands: async () => this.post({ type: "commands", list: await slashCommands(this.ctx) }),
    mode: async () => {
      await vscode.commands.executeCommand("agentLsp.selectMode" satisfies CommandId);
    },
    runPlan: async (m) => {
      await runPlan(this.ctx, this.plans, m.session);
    },
    stopProcess: (m) => this.processes.stop(m.session, m.id),
    rewind: (m) => rewindAction(this.ctx, { show: (s) => this.pick(s), session: this.session, prompts: this.transcript.prompts, running: (s) => this.running(s), retry: (s) => this.retry(s) }, m.action, m.prompt),
  };

  /** Retry: the session's last prompt again (agent.run with retry), shown as it runs; the chat reads the session again once it ends, without the earlier answer. */
  private async retry(session: string): Promise<void> {
    const prompt = this.transcript.prompts.at(-1) ?? "";
    this.post({ type: "items", items: this.transcript.note(`↻ retrying the last prompt${prompt ? `: ${prompt.split("\n")[0] ?? ""}` : ""}`) });
    try {
      const onBegin = () => this.postState(true);
      await launch(this.ctx, requests.run, { session, retry: true }, { title: prompt || "retry", prompt, fromChat: true, onBegin });
    } finally {
      this.postState();
    }
    if (this.session === session) {
      await this.pick(session);
    }
  }

  /** Sends the page the whole transcript: the empty chat's items when it has none, then the edits waiting for review (they belong to the window, not to a session). */
  private reset(): void {
    const items = this.transcript.all();
    const reviews = this.ctx.reviews.list().map((r) => reviewItem(this.ctx.reviews.card(r)));
    this.post({ type: "reset", items: [...(items.length ? items : emptyItems()), ...reviews], session: this.session ?? "", title: this.title });
    this.postState();
    void this.showEndpoint();
  }

  /** An empty chat's first line: the model, the endpoint, whether a key is set (and Set API Key when one is needed). */
  private async showEndpoint(): Promise<void> {
    if (this.session || this.transcript.all().length) {
      return;
    }
    const ep = await (await this.ctx.ready()).send(requests.endpoint, {}).catch(() => undefined);
    if (ep && !this.session && !this.transcript.all().length) {
      this.post({ type: "items", items: [{ id: "endpoint", html: endpointHtml(ep) }] });
    }
  }

  /** Sends prompt with the images pasted or dropped in the box: a new session, or a follow-up in the one shown (queued while its run is going). */
  async send(text: string, images: ImageRef[] = []): Promise<void> {
    const prompt = text.trim();
    if (!prompt) {
      return;
    }
    const { context, labels } = await resolveRefs(parseRefs(prompt));
    const session = this.session;
    const running = session !== undefined && this.running(session);
    if (!running) {
      // A queued prompt shows with its message.queued event, with its place in the queue.
      this.showPrompt(prompt, labels);
    }
    const args = { prompt, ...(context.length && { context }), ...(images.length && { images }) };
    let result: RunResult | undefined;
    try {
      const onBegin = (run: Run) => {
        this.pending = session ? undefined : run;
        this.postState(true);
      };
      const opts = { title: prompt, prompt, fromChat: true, onBegin };
      result = session ? await followUpRun(this.ctx, session, args, opts) : await runPrompt(this.ctx, args, opts);
    } finally {
      this.postState();
    }
    if (!result) {
      this.post({ type: "items", items: this.transcript.note("cancelled before the run started") });
    } else if (result.status === "done" && result.steps === 0 && result.reply) {
      this.post({ type: "items", items: this.transcript.note(result.reply) }); // a built-in slash command's answer: no run, no events
    } else if (result.status !== "queued" && result.session === this.session) {
      this.showResult(result);
    }
  }

  /** Shows a run's result: its end line, and Run this plan after a plan (plan.ts). */
  private showResult(r: FinishedRun): void {
    this.post({ type: "items", items: [...this.transcript.result(r), ...this.plans.items(r)] });
  }

  /** Shows a prompt; the first of a new chat titles it. */
  private showPrompt(prompt: string, labels: RefLabel[]): void {
    if (!this.session && !this.transcript.all().length) {
      this.post({ type: "reset", items: [], session: "", title: "" }); // the empty chat's help goes
      const [first = ""] = prompt.split("\n");
      this.title = first;
    }
    this.post({ type: "items", items: this.transcript.user(prompt, labels) });
  }

  /**
   * Shows a run a command started (Agent: Run, Ask Agent About This
   * Selection, Follow Up, Resume) as it begins: its session (a new chat for a
   * new one), its prompt, or a resumed line, and its result once it ends. The
   * view is revealed, keeping the focus where it is once the view exists.
   */
  private adopt(run: Run): void {
    if (run.fromChat) {
      return;
    }
    if (this.view?.show) {
      this.view.show(true);
    } else {
      void vscode.commands.executeCommand(`${ChatView.viewId}.focus`);
    }
    const shown = () => {
      const queued = run.session !== undefined && this.ctx.runs.list().some((r) => r !== run && r.session === run.session);
      if (run.prompt === undefined) {
        this.post({ type: "items", items: this.transcript.resumed() });
      } else if (!queued) {
        this.showPrompt(run.prompt, run.about ? [{ label: run.about }] : []);
      }
      this.postState(true);
    };
    if (!run.session) {
      this.pending = run;
      this.transcript = new ChatTranscript();
      this.title = "";
      this.reset();
      shown();
    } else if (run.session !== this.session) {
      void this.pick(run.session, shown).catch((e: unknown) => this.post({ type: "items", items: this.transcript.note(errorText(e), "error") }));
    } else {
      shown();
    }
  }

  /** Stops the run of the session shown (agent.cancel), or the chat's new run before its session is known. */
  async stop(): Promise<void> {
    const run = this.ctx.runs.list().find((r) => (this.session ? r.session === this.session : r === this.pending));
    if (run) {
      await cancelRun(this.ctx, run);
    }
  }

  /** Sends the page the stored sessions for its picker, by title. */
  async listSessions(): Promise<void> {
    const list = await (await this.ctx.ready()).send(requests.sessions, {});
    const mine = list.find((s) => s.session === this.session);
    if (mine?.title) {
      this.title = mine.title;
    }
    this.post({ type: "sessions", list: list.map((s) => ({ session: s.session, label: sessionLabel(s) })), current: this.session ?? "", title: this.title });
  }

  /** Shows session's transcript, or a new chat (undefined); then, for a session, what then adds, then the events that came meanwhile. */
  async pick(session: string | undefined, then?: () => void): Promise<void> {
    this.pending = undefined;
    if (!session) {
      this.loading = undefined;
      this.transcript = new ChatTranscript();
      this.title = "";
      this.reset();
      return;
    }
    const loading = { session, events: [] as AgentEvent[], results: [] as FinishedRun[] };
    this.loading = loading;
    try {
      const detail = await (await this.ctx.ready()).send(requests.session, { session });
      if (this.loading !== loading) {
        return; // another pick came after
      }
      this.transcript = ChatTranscript.fromSession(detail);
      this.title = detail.title;
      this.reset();
      then?.();
    } finally {
      if (this.loading === loading) {
        this.loading = undefined;
      }
    }
    for (const ev of loading.events) {
      this.onEvent(ev);
    }
    for (const r of loading.results) {
      this.showResult(r);
    }
  }

  /** Follows the events of the session shown; a new chat takes the session of the run it started. */
  private onEvent(ev: AgentEvent): void {
    if (this.loading?.session === ev.session) {
      this.loading.events.push(ev);
      return;
    }
    if (!this.session && this.pending && ev.type === "run.start" && this.pending.session === ev.session) {
      this.transcript.session = ev.session;
      this.pending = undefined;
      this.postState();
      void this.listSessions().catch(() => {});
    }
    if (ev.session !== this.session) {
      return;
    }
    if (ev.type === "events.dropped") {
      // The server dropped events of this session this window did not read in time: its transcript is read again.
      void this.pick(ev.session).catch((e: unknown) => this.post({ type: "items", items: this.transcript.note(errorText(e), "error") }));
      return;
    }
    const items = this.transcript.event(ev);
    if (items.length) {
      this.post({ type: "items", items });
    }
    if (ev.type === "run.end" || ev.type === "run.start") {
      this.postState();
    }
  }

  /** True while a run of this window works on session. */
  private running(session: string): boolean {
    return this.ctx.runs.list().some((r) => r.session === session);
  }

  private postState(starting = false): void {
    const running = starting || (this.session ? this.running(this.session) : this.pending !== undefined && this.ctx.runs.list().includes(this.pending));
    this.post({ type: "state", running, session: this.session ?? "", title: this.title, mode: this.ctx.mode.get() });
    this.processes.follow(this.session);
  }

  private post(m: ToPage): void {
    void this.view?.webview.postMessage(m);
  }

  dispose(): void {
    this.subs.forEach((d) => {
      d.dispose();
    });
  }
}

/** The context references of refs, from the active editor and the workspace folders, and their labels; an unresolvable one throws. */
async function resolveRefs(refs: TypedRef[]): Promise<{ context: ContextRef[]; labels: RefLabel[] }> {
  const context: ContextRef[] = [];
  const labels: RefLabel[] = [];
  const editor = vscode.window.activeTextEditor;
  for (const ref of refs) {
    if (ref.kind === "selection") {
      if (!editor || editor.selection.isEmpty) {
        throw new Error("#selection: select some code in an editor first");
      }
      const r = editor.selection;
      context.push({ uri: editor.document.uri.toString(), range: { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } } });
      labels.push({ label: `selection ${vscode.workspace.asRelativePath(editor.document.uri)}:${r.start.line + 1}-${r.end.line + 1}` });
    } else if (ref.path) {
      const uri = await findFile(ref.path);
      context.push({ uri: uri.toString() });
      labels.push({ label: `file ${ref.path}` });
    } else {
      if (!editor) {
        throw new Error("#file: open the file in an editor first, or name it: #file:path/to/file");
      }
      context.push({ uri: editor.document.uri.toString() });
      labels.push({ label: `file ${vscode.workspace.asRelativePath(editor.document.uri)}` });
    }
  }
  return { context, labels };
}

/** The file path names in the first workspace folder that has it. */
async function findFile(path: string): Promise<vscode.Uri> {
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const uri = vscode.Uri.joinPath(folder.uri, path);
    try {
      await vscode.workspace.fs.stat(uri);
      return uri;
    } catch {
      // not in this folder
    }
  }
  throw new Error(`#file:${path}: no such file in the workspace folders`);
}

function nonce(): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from({ length: 32 }, () => chars[Math.floor(Math.random() * chars.length)]).join("");
}

/**
 * The page: the session picker, the transcript, the prompt box with Send and
 * Stop; its style and scripts are media/chat.css, media/chat.js and
 * media/slash.js (the slash commands' list). Nothing else loads: no other
 * style or script, no image, font or connection.
 */
export function page(cspSource: string, nonce: string, style: string, script: string, slash: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(style)}">
</head>
<body>
<div id="bar"><select id="session" title="Session"><option value="">New chat</option></select><button id="mode" class="secondary" title="Agent mode: what the next runs may do (click to switch)">agent</button><button id="new" class="secondary" title="New chat">+</button></div>
<div id="log" role="log" aria-live="polite"></div>
<div id="processes" hidden></div>
<div id="input">
<textarea id="prompt" placeholder="Ask the agent… (/ for commands; #file, #file:path, #selection attach context; Ctrl+Enter sends)"></textarea>
<div id="attached" hidden></div>
<div id="buttons"><button id="stop" class="secondary" hidden>Stop</button><button id="send">Send</button></div>
</div>
<script nonce="${nonce}" src="${escapeHtml(script)}"></script>
<script nonce="${nonce}" src="${escapeHtml(slash)}"></script>
</body></html>`;
}
