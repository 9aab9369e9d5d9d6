// The chat view's transcript of one session, as HTML items the webview shows
// in order: the user's prompts (with their attached #file/#selection
// references), the agent's replies rendered as Markdown while they stream,
// tool calls as collapsible rows with their status (toolRows.ts: an edit's
// diff, a command's exit code and last output), queued prompts, and the end
// line of each run (status, what failed, edits, steps, tokens and cost, the
// prompts it never read). Built from agent/event notifications and from a
// stored transcript (agent.session). Also the card of an agent edit waiting
// for review: its diff, with the review's buttons. No vscode import.
import { dollars, tokens } from "./format";
import { hunkLines } from "./hunks";
import { escapeHtml, renderInline, renderMarkdown } from "./markdown";
import type { AgentEvent, Budget, FinishedRun, Message, SessionDetail, UsageEvent } from "./protocol";
import type { ReviewHunk } from "./reviewModel";
import { parseArgs, toolHtml, type ToolRow } from "./toolRows";

export { toolTarget } from "./toolRows";

/** One row of the transcript: its id in the page, and its HTML. */
export interface ChatItem {
  id: string;
  html: string;
}

/** A reference attached to a prompt, as the chat shows it. */
export interface RefLabel {
  label: string;
}

/** The end of a run, as its end line shows it. */
export interface RunEnd {
  status: string;
  /** For status limit: which limit stopped the run. */
  limit?: string | undefined;
  error?: string | undefined;
  edits?: number;
  steps?: number;
  usage?: { total: number; cost?: number | undefined } | undefined;
  /** The model of the run's last call. */
  model?: string | undefined;
}

/** The last segment of a file URI's path, for a link's text. */
export function fileName(uri: string): string {
  const path = uri.replace(/^[a-z-]+:\/*/, "/");
  return decodeURIComponent(path.split("/").pop() || path);
}

/** The end line of a run: "done · 1 edit · 3 steps · 1.2k tokens · $0.01 · gpt-4o", and what failed. */
export function endLine(e: RunEnd): string {
  const parts = [e.limit ? `${e.status} (${e.limit})` : e.status];
  if (e.edits !== undefined) parts.push(`${e.edits} edit${e.edits === 1 ? "" : "s"}`);
  if (e.steps !== undefined) parts.push(`${e.steps} step${e.steps === 1 ? "" : "s"}`);
  if (e.usage?.total) parts.push(`${tokens(e.usage.total)} tokens`);
  if (e.usage?.cost) parts.push(dollars(e.usage.cost));
  if (e.model) parts.push(e.model);
  return parts.join(" · ") + (e.error ? `: ${e.error}` : "");
}

/** What a run's budget leaves: "12.3k of 50k tokens left · $0.12 of $0.50 left". */
export function budgetLine(b: Budget): string {
  const parts: string[] = [];
  if (b.maxTokens) parts.push(`${tokens(Math.max(b.maxTokens - b.tokens, 0))} of ${tokens(b.maxTokens)} tokens left`);
  if (b.maxCost) parts.push(`${dollars(Math.max(b.maxCost - (b.cost ?? 0), 0))} of ${dollars(b.maxCost)} left`);
  return parts.join(" · ");
}

export class ChatTranscript {
  private items = new Map<string, ChatItem>();
  private order: string[] = [];
  private next = 0;
  /** The id of the agent reply streaming now, and its text so far. */
  private reply: { id: string; text: string } | undefined;
  /** Tool rows by call id. */
  private tools = new Map<string, ToolRow>();
  /** The run going: its edits so far and its latest usage. */
  private run = { edits: 0, usage: undefined as UsageEvent | undefined, endId: "", budgetId: "", mode: "" };

  /** The session shown; undefined for a new chat until its run starts. */
  constructor(public session?: string) {}

  /** Every item, in order. */
  all(): ChatItem[] {
    return this.order.flatMap((id) => this.items.get(id) ?? []);
  }

  private put(html: string, id = `i${++this.next}`): ChatItem {
    if (!this.items.has(id)) {
      this.order.push(id);
    }
    const item = { id, html };
    this.items.set(id, item);
    return item;
  }

  /** The prompts shown, in order: a prompt's buttons name its index here (rewind.ts matches it to its checkpoint). */
  readonly prompts: string[] = [];

  /** A prompt the user sent, with the references attached to it, and its Rewind buttons (rewind.ts). */
  user(prompt: string, refs: RefLabel[] = [], note = ""): ChatItem[] {
    this.closeReply();
    const chips = refs.map((r) => `<span class="ref">#${escapeHtml(r.label)}</span>`).join(" ");
    const actions = promptActions(this.prompts.push(prompt) - 1);
    return [this.put(`<div class="msg user"><div class="who">You${note ? ` <span class="note">${escapeHtml(note)}</span>` : ""}</div>${renderMarkdown(prompt)}${chips ? `<div class="refs">${chips}</div>` : ""}${actions}</div>`)];
  }

  /** A line of the extension's own (an error before the run started, a note). */
  note(text: string, kind: "info" | "error" = "info"): ChatItem[] {
    return [this.put(`<div class="line ${kind}">${renderInline(text)}</div>`)];
  }

  /** The items ev adds or changes; [] for what the chat does not show. */
  event(ev: AgentEvent): ChatItem[] {
    const sub = ev.contextId;
    switch (ev.type) {
      case "run.start": {
        this.closeReply();
        const mode = ev.mode && ev.mode !== "agent" ? `${ev.mode} mode: the agent only reads` : "";
        this.run = { edits: 0, usage: undefined, endId: "", budgetId: "", mode };
        const parts = [mode, ev.budget ? budgetLine(ev.budget) : ""].filter(Boolean);
        if (!parts.length) {
          return [];
        }
        this.run.budgetId = `b${++this.next}`;
        return [this.put(`<div class="line note">${escapeHtml(parts.join(" · "))}</div>`, this.run.budgetId)];
      }
      case "message.delta":
        if (sub || ev.text === "") {
          return [];
        }
        this.reply ??= { id: `i${++this.next}`, text: "" };
        this.reply.text += ev.text;
        return [this.put(agentHtml(this.reply.text), this.reply.id)];
      case "message":
        return this.message(ev.message, sub);
      case "message.queued":
        this.prompts.push(ev.message.content); // a prompt of the session once the run reads it
        return [this.put(`<div class="msg user queued"><div class="who">You <span class="note">queued #${ev.position}: the agent reads it at its next step</span></div>${renderMarkdown(ev.message.content)}</div>`, `q-${ev.message.id}`)];
      case "tool.start": {
        this.closeReply();
        const row: ToolRow = { id: `t-${ev.callId}`, name: ev.name, args: ev.args, sub };
        this.tools.set(ev.callId, row);
        return [this.put(toolHtml(row), row.id)];
      }
      case "tool.end": {
        const row = this.tools.get(ev.callId) ?? { id: `t-${ev.callId}`, name: ev.name, args: "", sub };
        this.tools.set(ev.callId, row);
        row.end = { ok: ev.ok, summary: ev.summary, output: ev.output ?? "" };
        return [this.put(toolHtml(row), row.id)];
      }
      case "edit": {
        this.run.edits += ev.applied ? 1 : 0;
        const row = this.editRow(ev.uri);
        if (row) {
          row.uri = ev.uri;
          return [this.put(toolHtml(row), row.id)];
        }
        return [this.put(`<div class="line edit">${ev.applied ? "edited" : "edit refused:"} <a href="#" data-open="${escapeHtml(ev.uri)}">${escapeHtml(fileName(ev.uri))}</a></div>`)];
      }
      case "subagent.start":
        return [this.put(`<div class="line sub">⤷ subagent: ${renderInline(ev.task)}</div>`)];
      case "subagent.end":
        return [this.put(`<div class="line sub">⤶ subagent ${escapeHtml(ev.status)}</div>`)];
      case "context.compacted":
        return [this.put(`<div class="line note">⋯ ${ev.messages} older messages ${ev.summarized ? "summarized" : "dropped"} (${ev.before} → ${ev.after} tokens)</div>`)];
      case "usage":
        this.run.usage = ev; // its run totals include the subagents'
        if (ev.budget) {
          this.run.budgetId ||= `b${++this.next}`;
          const parts = [this.run.mode, budgetLine(ev.budget)].filter(Boolean); // the mode stays beside what the budget leaves
          return [this.put(`<div class="line note">${escapeHtml(parts.join(" · "))}</div>`, this.run.budgetId)];
        }
        return [];
      case "run.end":
        this.closeReply();
        return [this.endItem({ status: ev.status, limit: ev.limit, error: ev.error, edits: this.run.edits, usage: this.run.usage?.run, model: this.run.usage?.model })];
      case "events.dropped":
        return []; // the chat reads the session again (chat.ts)
      default:
        ev satisfies never;
        return [];
    }
  }

  /** Completes the end line with what only the run's result has (its steps, its exact counts). */
  result(r: FinishedRun): ChatItem[] {
    const usage = { total: r.usage.totalTokens, cost: r.usage.cost };
    return [this.endItem({ status: r.status, limit: r.limit, error: r.error, edits: r.edits, steps: r.steps, usage, model: this.run.usage?.model }, r.queued ?? [])];
  }

  /** The run's end line; with the prompts it never read, each shown, and Send Again, which sends them to the session as one prompt. */
  private endItem(e: RunEnd, unread: string[] = []): ChatItem {
    this.run.endId ||= `e${++this.next}`;
    const kind = e.status === "failed" ? "error" : e.status === "done" ? "ok" : "warn";
    const left = unread.length
      ? `<div class="unread"><div class="note">Not read by the ${escapeHtml(e.status)} run:</div>${unread.map((p) => `<div class="msg user queued">${renderMarkdown(p)}</div>`).join("")}` +
        `<button class="secondary" data-resend="${escapeHtml(unread.join("\n\n"))}">Send Again</button></div>`
      : "";
    return this.put(`<div class="end ${kind}">── ${renderInline(endLine(e))}</div>${left}`, this.run.endId);
  }

  /** A line for a run that no prompt of this chat started: a resumed session's. */
  resumed(): ChatItem[] {
    this.closeReply();
    return [this.put(`<div class="line run">↻ resumed</div>`)];
  }

  /** The newest edit row of the run whose path the file uri ends with and that no edit event named yet. */
  private editRow(uri: string): ToolRow | undefined {
    const rows = [...this.tools.values()].reverse();
    return rows.find((r) => {
      const path = parseArgs(r.args)["path"];
      return (r.name === "edit_file" || r.name === "create_file") && !r.uri && typeof path === "string" && decodeURIComponent(uri).endsWith("/" + path.replace(/^\.?\//, ""));
    });
  }

  private message(m: Message, sub: string | undefined): ChatItem[] {
    if (m.role === "human" && !sub) {
      return []; // the chat showed the prompt when it was sent (or queued)
    }
    if (m.role === "ai" && sub) {
      return m.content ? [this.put(`<div class="msg agent sub"><div class="who">Subagent</div>${renderMarkdown(m.content)}</div>`)] : [];
    }
    if (m.role === "ai") {
      const out = this.reply && m.content ? [this.put(agentHtml(m.content), this.reply.id)] : [];
      this.closeReply();
      return out;
    }
    return [];
  }

  private closeReply(): void {
    this.reply = undefined;
  }

  /** The transcript of a stored session: its prompts, replies and tool calls with their results. */
  static fromSession(d: SessionDetail): ChatTranscript {
    const t = new ChatTranscript(d.session);
    for (const m of d.messages) {
      if (m.role === "human") {
        t.user(m.content);
      } else if (m.role === "ai") {
        if (m.content) {
          t.put(agentHtml(m.content));
        }
        for (const c of m.toolCalls ?? []) {
          const row: ToolRow = { id: `t-${c.id}`, name: c.name, args: c.args };
          t.tools.set(c.id, row);
          t.put(toolHtml(row), row.id);
        }
      } else if (m.role === "tool" && m.toolCallId && t.tools.has(m.toolCallId)) {
        const row = t.tools.get(m.toolCallId) as ToolRow; // has() above
        row.end = { ok: !/^error\b/i.test(m.content), summary: "", output: m.content };
        t.put(toolHtml(row), row.id);
      }
    }
    if (d.status && d.status !== "running") {
      for (const row of t.tools.values()) {
        if (!row.end) {
          row.end = { ok: false, summary: "interrupted: no result", output: "" };
          t.put(toolHtml(row), row.id);
        }
      }
      t.endItem({ status: d.status });
      t.run.endId = "";
    }
    return t;
  }
}

/** The buttons under the prompt at index i of the transcript's prompts; the page shows Retry on the last one only, and none while a run goes. */
export function promptActions(i: number): string {
  const b = (action: string, label: string, title: string) => `<button class="link" data-rewind="${action}" data-prompt="${i}" title="${title}">${label}</button>`;
  return (
    `<div class="prompt-actions">` +
    b("rewind", "Rewind…", "Go back to before this prompt: the conversation, the files, or both") +
    b("changes", "Changes since here", "Compare the files changed since this prompt with their content before it") +
    b("fork", "Fork from here", "A new session with the conversation before this prompt; files untouched") +
    b("retry", "Retry", "Send the last prompt again, its earlier answer rewound") +
    `</div>`
  );
}

function agentHtml(text: string): string {
  return `<div class="msg agent"><div class="who">Agent</div>${renderMarkdown(text)}</div>`;
}

/** A reference typed in a prompt: #file (the active editor's), #file:PATH, or #selection. */
export interface TypedRef {
  kind: "file" | "selection";
  /** For #file:PATH, the path as typed (relative to a workspace folder). */
  path?: string;
}

/** The #file, #file:PATH and #selection references of prompt, in order, each once. */
export function parseRefs(prompt: string): TypedRef[] {
  const seen = new Set<string>();
  const out: TypedRef[] = [];
  for (const m of prompt.matchAll(/(?:^|\s)#(file|selection)(?::(\S+?))?(?=[.,;:!?]?(?:\s|$))/g)) {
    const ref: TypedRef = m[1] === "file" && m[2] ? { kind: "file", path: m[2] } : { kind: m[1] as TypedRef["kind"] };
    const key = `${ref.kind}:${ref.path ?? ""}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(ref);
    }
  }
  return out;
}

/** An agent edit under review, as the chat shows it (review.ts builds it). */
export interface ReviewCard {
  id: number;
  label: string;
  why: string;
  place: string;
  protected: boolean;
  files: { name: string; hunks: ReviewHunk[] }[];
  /** How it ended; unset while it waits. */
  outcome?: string | undefined;
  reason?: string | undefined;
}

/** The chat's item of a review: its diff with Accept and Reject per hunk and for the edit while it waits, its outcome after. */
export function reviewItem(c: ReviewCard): ChatItem {
  const id = `rv-${c.id}`;
  const head = `${escapeHtml(c.label)} <span class="note">${escapeHtml(c.why)}${c.place ? ` (${escapeHtml(c.place)})` : ""}</span>`;
  if (c.outcome) {
    const ok = c.outcome.startsWith("accepted");
    const reason = c.reason ? `: ${escapeHtml(c.reason)}` : "";
    return { id, html: `<div class="line review-end ${ok ? "ok" : "error"}">${ok ? "✓" : "✗"} ${escapeHtml(c.label)}: ${escapeHtml(c.outcome)}${reason}</div>` };
  }
  const button = (action: string, label: string, secondary = false, extra = "") => `<button class="${secondary ? "secondary" : ""}" data-review="${action}" data-id="${c.id}"${extra}>${label}</button>`;
  const files = c.files
    .map((f, i) => {
      const hunks = f.hunks
        .map((h) => {
          const at = ` data-file="${i}" data-key="${escapeHtml(h.key)}"`;
          const actions = (h.accepted ? `<span class="note">✓ accepted</span>` : button("acceptChange", "Accept", false, at)) + button("rejectChange", "Reject", true, at);
          const lines = [...h.old.map((l) => `<span class="del">-${escapeHtml(l.replace(/\r?\n$/, ""))}</span>`), ...h.lines.map((l) => `<span class="add">+${escapeHtml(l.replace(/\r?\n$/, ""))}</span>`)];
          return `<div class="hunk"><div class="hunk-head">${escapeHtml(hunkLines(h))} ${actions}</div><pre class="diff">${lines.join("\n")}</pre></div>`;
        })
        .join("");
      return `<div class="file"><a href="#" data-review="showReview" data-id="${c.id}">${escapeHtml(f.name)}</a>${hunks || ` <span class="note">no change left</span>`}</div>`;
    })
    .join("");
  const all = button("acceptEdit", "Accept Edit") + button("rejectEdit", "Reject Edit", true) + button("acceptAll", "Accept All") + button("rejectAll", "Reject All", true);
  const note = c.protected ? `<div class="note">A protected file: Accept All leaves it to you.</div>` : "";
  return { id, html: `<div class="msg review"><div class="who">Review: ${head}</div>${files}${note}<div class="review-actions">${all}</div></div>` };
}
