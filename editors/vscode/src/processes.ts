// The chat's "Background processes" section: the running background
// processes (run_command with background: true) of the session the chat
// shows, from agent.processes, each with a Stop button (agent.stopProcess).
// The list is asked again at the session's run.start, tool.end and run.end
// events (a tool started or stopped one, a run's end stops them all), and
// every few seconds while it lists any (a process may end by itself).
import type * as vscode from "vscode";
import type { Ctx } from "./ctx";
import { escapeHtml } from "./markdown";
import { requests, type AgentEvent, type ProcessInfo } from "./protocol";

/** The events after which the list is asked again. */
const refreshOn: ReadonlySet<AgentEvent["type"]> = new Set(["run.start", "tool.end", "run.end"]);

/** How often the list is asked again while it lists a process. */
const pollMs = 2000;

/** The section's HTML for list ("" when it is empty: the section hides). */
export function processesHtml(list: readonly ProcessInfo[]): string {
  if (!list.length) {
    return "";
  }
  const rows = list.map((p) => {
    const since = new Date(p.started);
    const when = isNaN(since.getTime()) ? "" : ` · since ${since.toLocaleTimeString()}`;
    return (
      `<div class="process"><code>${escapeHtml(p.command)}</code> <span class="note">${escapeHtml(p.id)} · ${escapeHtml(p.project)}${escapeHtml(when)}</span> ` +
      `<button class="secondary" data-stop-process="${escapeHtml(p.id)}" data-session="${escapeHtml(p.session)}" title="Stop this process and every process it started">Stop</button></div>`
    );
  });
  return `<div class="who">Background processes (${list.length})</div>${rows.join("")}`;
}

export class ProcessList implements vscode.Disposable {
  /** The session whose processes show; undefined: none (a new chat). */
  private session: string | undefined;
  /** The HTML shown now. */
  private html = "";
  /** A refresh is under way; another was asked for meanwhile. */
  private busy = false;
  private again = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private sub: vscode.Disposable;

  constructor(
    private ctx: Ctx,
    /** Shows the section's HTML in the chat. */
    private show: (html: string) => void,
  ) {
    this.sub = ctx.onAgentEvent((ev) => {
      if (ev.session === this.session && !ev.contextId && refreshOn.has(ev.type)) {
        void this.refresh();
      }
    });
  }

  /** Shows the processes of session (the chat's session, whenever the chat says which it shows). */
  follow(session: string | undefined): void {
    if (session === this.session) {
      this.show(this.html);
      return;
    }
    this.session = session;
    this.put("");
    void this.refresh();
  }

  /** Stops process id of session, then asks for the list again. */
  async stop(session: string, id: string): Promise<void> {
    try {
      await (await this.ctx.ready()).send(requests.stopProcess, { session, id });
    } finally {
      await this.refresh();
    }
  }

  /** Asks agent.processes for the session's processes and shows them; polls while there are any. */
  async refresh(): Promise<void> {
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    try {
      do {
        this.again = false;
        const session = this.session;
        const list = session ? await this.list(session) : [];
        if (session === this.session) {
          this.put(processesHtml(list));
        }
      } while (this.again);
    } finally {
      this.busy = false;
    }
    clearTimeout(this.timer);
    this.timer = this.html ? setTimeout(() => void this.refresh(), pollMs) : undefined;
  }

  /** The running processes of session; none when the server cannot say (it is restarting). */
  private async list(session: string): Promise<ProcessInfo[]> {
    try {
      return await (await this.ctx.ready()).send(requests.processes, { session });
    } catch {
      return [];
    }
  }

  private put(html: string): void {
    if (html !== this.html) {
      this.html = html;
      this.show(html);
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.sub.dispose();
  }
}
