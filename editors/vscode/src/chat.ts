// The chat view (a webview view, agentLsp.chat): one session's live
// transcript (chatModel.ts), a multi-line input with Send and Stop, and a
// session picker. A prompt starts a new session, or follows up in the shown
// one (queued while its run is going); #file, #file:PATH and #selection
// attach context references (agent.run's context: the server reads them as
// the editor has them, never pasted). Each agent edit waiting for review shows
// with its diff and the review's buttons (review.ts). Runs go through launch.ts, so they show
// in the status bar and notifications as the commands' runs do.
import * as vscode from "vscode";
import { ChatTranscript, parseRefs, reviewItem, type ChatItem, type RefLabel, type TypedRef } from "./chatModel";
import type { CommandId } from "./commands";
import type { Ctx } from "./ctx";
import { errorText } from "./format";
import { cancelRun, followUpRun, runPrompt } from "./launch";
import { requests, type AgentEvent, type ContextRef, type RunResult } from "./protocol";
import { endpointHtml, fixCommand } from "./reasons";
import type { Run } from "./runs";
import { slashCommands, slashScript, slashStyle, type SlashItem } from "./slash";

/** What the page sends the extension. */
export type FromPage =
  | { type: "ready" }
  | { type: "send"; text: string }
  | { type: "stop" }
  | { type: "sessions" }
  | { type: "pick"; session: string }
  | { type: "open"; uri: string }
  | { type: "review"; action: ReviewAction; id: number; file?: number; key?: string }
  | { type: "commands" };

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

/** What the extension sends the page. */
export type ToPage =
  | { type: "reset"; items: ChatItem[]; session: string }
  | { type: "items"; items: ChatItem[] }
  | { type: "state"; running: boolean; session: string }
  | { type: "sessions"; list: { session: string; label: string }[]; current: string }
  | { type: "commands"; list: SlashItem[] };

/** The part of a webview view the chat uses (a vscode.WebviewView; tests pass a fake). */
export interface ChatWebviewView {
  webview: {
    options: vscode.WebviewOptions;
    html: string;
    cspSource: string;
    postMessage(m: ToPage): Thenable<boolean>;
    onDidReceiveMessage(l: (m: FromPage) => unknown): vscode.Disposable;
  };
  onDidDispose(l: () => unknown): vscode.Disposable;
  show?(preserveFocus?: boolean): void;
}

export class ChatView implements vscode.Disposable {
  static readonly viewId = "agentLsp.chat";
  private view: ChatWebviewView | undefined;
  private transcript = new ChatTranscript();
  /** The run the chat started last whose session is not known yet (a new chat). */
  private pending: Run | undefined;
  private subs: vscode.Disposable[] = [];

  constructor(private ctx: Ctx) {
    this.subs.push(
      ctx.onAgentEvent((ev) => this.onEvent(ev)),
      ctx.runs.onIdle(() => this.postState()),
      ctx.reviews.onDidChange((r) => this.post({ type: "items", items: [reviewItem(ctx.reviews.card(r))] })),
    );
  }

  /** Registers the view (package.json contributes agentLsp.chat). */
  register(): vscode.Disposable {
    return vscode.window.registerWebviewViewProvider(
      ChatView.viewId,
      { resolveWebviewView: (view) => this.resolve(view as unknown as ChatWebviewView) },
      { webviewOptions: { retainContextWhenHidden: true } },
    );
  }

  /** The session shown, undefined for a new chat. */
  get session(): string | undefined {
    return this.transcript.session;
  }

  /** Shows the page in view and follows its messages. */
  resolve(view: ChatWebviewView): void {
    this.view = view;
    view.webview.options = { enableScripts: true };
    view.webview.html = page(view.webview.cspSource, nonce());
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
      this.post({ type: "reset", items: this.withReviews(this.transcript.all()), session: this.session ?? "" });
      this.postState();
      void this.showEndpoint();
    },
    send: (m) => this.send(m.text),
    stop: () => this.stop(),
    sessions: () => this.listSessions(),
    pick: (m) => this.pick(m.session || undefined),
    open: async (m) => {
      const fix = fixCommand(m.uri); // an empty chat's Set API Key
      await (fix ? vscode.commands.executeCommand(fix) : vscode.window.showTextDocument(vscode.Uri.parse(m.uri), { preview: false }));
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
  };

  /** items, then the cards of the edits waiting for review (they belong to the window, not to a session). */
  private withReviews(items: ChatItem[]): ChatItem[] {
    return [...items, ...this.ctx.reviews.list().map((r) => reviewItem(this.ctx.reviews.card(r)))];
  }

  /** Sends prompt: a new session, or a follow-up in the one shown (queued while its run is going). */
  async send(text: string): Promise<void> {
    const prompt = text.trim();
    if (!prompt) {
      return;
    }
    const { context, labels } = await resolveRefs(parseRefs(prompt));
    const session = this.session;
    const running = session !== undefined && this.running(session);
    if (!running) {
      // A queued prompt shows with its message.queued event, with its place in the queue.
      this.post({ type: "items", items: this.transcript.user(prompt, labels) });
    }
    const args = { prompt, ...(context.length && { context }) };
    let result: RunResult | undefined;
    try {
      const begun = (run: Run) => {
        this.pending = session ? undefined : run;
        this.postState(true);
      };
      result = session ? await followUpRun(this.ctx, session, args, prompt, begun) : await runPrompt(this.ctx, args, prompt, begun);
    } finally {
      this.postState();
    }
    if (!result) {
      this.post({ type: "items", items: this.transcript.note("cancelled before the run started") });
    } else if (result.status === "done" && result.steps === 0 && result.reply) {
      this.post({ type: "items", items: this.transcript.note(result.reply) }); // a built-in slash command's answer: no run, no events
    } else if (result.status !== "queued" && result.session === this.session) {
      this.post({ type: "items", items: this.transcript.result(result) });
    }
  }

  /** Stops the run of the session shown (agent.cancel), or the chat's new run before its session is known. */
  async stop(): Promise<void> {
    const run = this.ctx.runs.list().find((r) => (this.session ? r.session === this.session : r === this.pending));
    if (run) {
      await cancelRun(this.ctx, run);
    }
  }

  /** Sends the page the stored sessions for its picker. */
  async listSessions(): Promise<void> {
    const list = await (await this.ctx.ready()).send(requests.sessions, {});
    this.post({
      type: "sessions",
      list: list.map((s) => ({ session: s.session, label: `${s.title || s.session} · ${s.status}` })),
      current: this.session ?? "",
    });
  }

  /** Shows session's transcript, or a new chat (undefined). */
  async pick(session: string | undefined): Promise<void> {
    this.pending = undefined;
    this.transcript = session ? ChatTranscript.fromSession(await (await this.ctx.ready()).send(requests.session, { session })) : new ChatTranscript();
    this.post({ type: "reset", items: this.withReviews(this.transcript.all()), session: session ?? "" });
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

  /** Follows the events of the session shown; a new chat takes the session of the run it started. */
  private onEvent(ev: AgentEvent): void {
    if (!this.session && this.pending && ev.type === "run.start" && this.pending.session === ev.session) {
      this.transcript.session = ev.session;
      this.pending = undefined;
      this.postState();
    }
    if (ev.session !== this.session) {
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
    this.post({ type: "state", running, session: this.session ?? "" });
  }

  private post(m: ToPage): void {
    void this.view?.webview.postMessage(m);
  }

  dispose(): void {
    this.subs.forEach((d) => d.dispose());
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

/** The page: the transcript, the session picker, the input with Send and Stop. Only script with the nonce runs. */
export function page(cspSource: string, nonce: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'nonce-${nonce}'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">
body { padding: 0 8px; display: flex; flex-direction: column; height: 100vh; box-sizing: border-box; margin: 0; font-size: var(--vscode-font-size); }
#bar { display: flex; gap: 4px; padding: 6px 0; }
#session { flex: 1; min-width: 0; background: var(--vscode-dropdown-background); color: var(--vscode-dropdown-foreground); border: 1px solid var(--vscode-dropdown-border); }
#log { flex: 1; overflow-y: auto; }
.msg { margin: 8px 0; }
.who { font-weight: bold; opacity: .8; }
.user { border-left: 2px solid var(--vscode-textLink-foreground); padding-left: 6px; }
.queued { opacity: .7; }
.note { opacity: .7; font-weight: normal; font-size: .9em; }
.ref { background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); border-radius: 3px; padding: 0 4px; font-size: .85em; }
.tool summary { cursor: pointer; }
.tool pre, pre { white-space: pre-wrap; word-break: break-word; background: var(--vscode-textCodeBlock-background); padding: 4px; }
.tool.failed .mark, .error { color: var(--vscode-errorForeground); }
.tool.ok .mark, .end.ok { color: var(--vscode-testing-iconPassed, inherit); }
.end { margin: 6px 0 12px; font-size: .9em; }
.line { font-size: .9em; margin: 2px 0; }
#input { display: flex; flex-direction: column; gap: 4px; padding: 6px 0 8px; }
textarea { width: 100%; box-sizing: border-box; min-height: 4em; resize: vertical; background: var(--vscode-input-background); color: var(--vscode-input-foreground); border: 1px solid var(--vscode-input-border, transparent); font-family: inherit; }
#buttons { display: flex; gap: 4px; justify-content: flex-end; }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: none; padding: 4px 10px; cursor: pointer; }
button.secondary { background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground); }
button[hidden] { display: none; }
.review { border-left: 2px solid var(--vscode-editorWarning-foreground, orange); padding-left: 6px; }
.review .file { margin: 4px 0; }
.hunk-head { margin-top: 4px; font-size: .9em; display: flex; gap: 4px; align-items: center; }
.hunk-head button, .review-actions button { padding: 2px 8px; }
.review-actions { display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0; }
pre.diff { margin: 2px 0; }
.diff .del { color: var(--vscode-gitDecoration-deletedResourceForeground, #c74e39); }
.diff .add { color: var(--vscode-gitDecoration-addedResourceForeground, #587c0c); }
${slashStyle}</style></head>
<body>
<div id="bar"><select id="session" title="Session"><option value="">New chat</option></select><button id="new" class="secondary" title="New chat">+</button></div>
<div id="log" role="log" aria-live="polite"></div>
<div id="input">
<textarea id="prompt" placeholder="Ask the agent… (/ for commands; #file, #file:path, #selection attach context; Ctrl+Enter sends)"></textarea>
<div id="buttons"><button id="stop" class="secondary" hidden>Stop</button><button id="send">Send</button></div>
</div>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
const log = document.getElementById("log"), prompt = document.getElementById("prompt"), select = document.getElementById("session");
const stop = document.getElementById("stop"), send = document.getElementById("send");
function put(item) {
  let el = document.getElementById(item.id);
  if (!el) { el = document.createElement("div"); el.id = item.id; log.appendChild(el); }
  const open = el.querySelector("details[open]") !== null;
  el.innerHTML = item.html;
  if (open) { const d = el.querySelector("details"); if (d) d.open = true; }
}
function setSession(session) {
  if (session && ![...select.options].some((o) => o.value === session)) select.add(new Option(session, session));
  select.value = session;
}
window.addEventListener("message", (e) => {
  const m = e.data;
  const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 20;
  if (m.type === "reset") { log.innerHTML = ""; m.items.forEach(put); setSession(m.session); }
  else if (m.type === "items") m.items.forEach(put);
  else if (m.type === "state") { stop.hidden = !m.running; setSession(m.session); document.body.dataset.running = String(m.running); document.body.dataset.session = m.session; }
  else if (m.type === "sessions") {
    select.length = 1;
    for (const s of m.list) select.add(new Option(s.label, s.session));
    setSession(m.current);
  }
  if (atEnd) log.scrollTop = log.scrollHeight;
});
function submit() { const text = prompt.value; if (!text.trim()) return; prompt.value = ""; vscode.postMessage({ type: "send", text }); }
send.addEventListener("click", submit);
prompt.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); submit(); } });
stop.addEventListener("click", () => vscode.postMessage({ type: "stop" }));
select.addEventListener("focus", () => vscode.postMessage({ type: "sessions" }));
select.addEventListener("change", () => vscode.postMessage({ type: "pick", session: select.value }));
document.getElementById("new").addEventListener("click", () => vscode.postMessage({ type: "pick", session: "" }));
log.addEventListener("click", (e) => {
  const a = e.target.closest("a[data-open]");
  if (a) { e.preventDefault(); vscode.postMessage({ type: "open", uri: a.dataset.open }); }
  const r = e.target.closest("[data-review]");
  if (r) {
    e.preventDefault();
    const d = r.dataset;
    vscode.postMessage({ type: "review", action: d.review, id: Number(d.id), ...(d.file !== undefined && { file: Number(d.file), key: d.key }) });
  }
});
${slashScript}
vscode.postMessage({ type: "ready" });
</script></body></html>`;
}
