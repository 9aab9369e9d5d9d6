// Text the extension shows: the output-channel transcript of agent/event,
// quick-pick items, session transcripts and the projects report as Markdown, run
// summaries and error messages. No vscode import.
import { plainLine } from "./markdown";
import { status } from "./toolRows";
import type { AgentEvent, AgentEventOf, McpProject, ModelInfo, ModelsResult, ProcessInfo, ProjectInfo, ResultOf, RunResult, SandboxReport, SessionDetail, SessionInfo, SubagentStatus } from "./protocol";

/** Turns agent/event notifications into transcript text for an output channel. */
export class EventFormatter {
  private openLine = new Map<string, boolean>(); // session -> a streamed reply line is open

  /** The text to append for ev, or "" when it adds nothing. */
  format(ev: AgentEvent): string {
    const s = ev.session;
    let out = "";
    const line = (text: string) => {
      if (this.openLine.get(s)) {
        out += "\n";
        this.openLine.set(s, false);
      }
      out += text + "\n";
    };
    const sub = ev.contextId ? `[${ev.contextId}] ` : "";
    switch (ev.type) {
      case "run.start":
        line(`── session ${s}${ev.project ? ` · project ${ev.project}` : ""} · ${budget(ev)}`);
        break;
      case "message": {
        const m = ev.message;
        if (m.role === "human") {
          line(`${sub}You: ${m.content}`);
        } else if (m.role === "ai" && sub && m.content) {
          line(`${sub}Agent: ${m.content}`); // a subagent's text is not streamed: its message is all there is
        } else if (m.role === "ai" && this.openLine.get(s)) {
          out += "\n"; // the streamed reply is complete
          this.openLine.set(s, false);
        }
        break;
      }
      case "message.queued":
        line(`${sub}queued (position ${ev.position}): ${ev.message.content}`);
        break;
      case "context.compacted":
        line(`${sub}  ${compacted(ev)}`);
        break;
      case "message.delta":
        if (ev.text !== "") {
          if (!this.openLine.get(s)) {
            out += `${sub}Agent: `;
            this.openLine.set(s, true);
          }
          out += ev.text;
        }
        break;
      case "tool.start":
        line(`${sub}  → ${ev.name}${target(ev.args)}`);
        break;
      case "tool.end":
        // The chat's mark (toolRows.ts): a command that ran and exited non-zero is not a failed tool.
        line(`${sub}  ${status({ id: "", name: ev.name, args: "", end: { ok: ev.ok, summary: ev.summary, output: ev.output ?? "" } }).mark} ${ev.name}${ev.summary ? `: ${ev.summary}` : ""}`);
        break;
      case "subagent.start":
        line(`${sub}  ⤷ subagent: ${ev.task}`);
        break;
      case "subagent.end":
        line(`${sub}  ⤶ subagent ${ev.status}`);
        break;
      case "edit":
        line(`${sub}  ${ev.applied ? "edited" : "edit refused"} ${ev.uri}`);
        break;
      case "usage":
        break; // the status bar shows the run's tokens and cost (usage.ts); the end line repeats them
      case "run.end":
        line(`── ${ev.status}${ev.error ? `: ${ev.error}` : ""}`);
        break;
      case "events.dropped":
        line(`  ⋯ ${ev.count} events of this session not shown (#${ev.fromSeq} to #${ev.toSeq}: the window did not read them in time); the chat reads the session again`);
        break;
      default:
        ev satisfies never; // a kind added to AgentEvent needs its case here
    }
    return out;
  }
}

/** A run's token budget, for its header line: the model's context size, and the tools left out to fit it. */
function budget(ev: AgentEventOf<"run.start">): string {
  const withheld = ev.withheld?.length ? ` (tools left out to fit it: ${ev.withheld.join(", ")})` : "";
  return `context ${ev.contextTokens} tokens${withheld}`;
}

/** Why older messages left the model's view, by context.compacted's reason. */
const compactedWhy: Record<AgentEventOf<"context.compacted">["reason"], string> = {
  budget: "to fit the context",
  overflow: "after the model's context overflowed",
};

/**
 * The line of a context.compacted event: how many older messages left the
 * model's view, why, the history's estimated tokens before and after, and
 * whether they went into the summary or were dropped (with the error that
 * cost the summary).
 */
function compacted(ev: AgentEventOf<"context.compacted">): string {
  const n = `${ev.messages} older message${ev.messages === 1 ? "" : "s"}`;
  const how = ev.summarized ? "summarized" : "dropped";
  const why = compactedWhy[ev.reason] ?? `(${ev.reason})`;
  return `⋯ ${n} ${how} ${why}${ev.summarized ? "" : ", without a summary"} (${ev.before} → ${ev.after} tokens)${ev.error ? `: ${ev.error}` : ""}`;
}

function target(args: string): string {
  try {
    const a = JSON.parse(args) as Record<string, unknown>;
    for (const k of ["path", "command", "pattern", "task", "project"]) {
      if (typeof a[k] === "string") {
        return " " + a[k];
      }
    }
  } catch {
    // not a JSON object: show nothing rather than a fragment
  }
  return "";
}

/**
 * A one-line summary of a run's result, for a notification: counts, then what
 * failed or the reply's first line without its Markdown marks, then how many queued prompts it never read;
 * for a queued prompt, its place in the queue.
 */
export function summary(r: RunResult): string {
  if (r.status === "queued") {
    return `Agent: queued as #${r.position} for the running session ${r.session}; the agent reads it at its next step`;
  }
  const edits = `${r.edits} edit${r.edits === 1 ? "" : "s"}`;
  const steps = `${r.steps} step${r.steps === 1 ? "" : "s"}`;
  const first = r.error ? (r.error.trim().split("\n")[0] ?? "") : plainLine(r.reply); // a notification shows Markdown as it is
  const short = first.length > 160 ? first.slice(0, 157) + "…" : first;
  const n = r.queued?.length ?? 0;
  const unread = n ? ` · ${n} queued prompt${n === 1 ? "" : "s"} not read` : "";
  const used = r.usage?.totalTokens ? `, ${usageText({ total: r.usage.totalTokens, cost: r.usage.cost })}` : "";
  return `Agent ${r.status} (${edits}, ${steps}${used})${short ? ": " + short : ""}${unread}`;
}

/** A token count in words: 1234 → "1.2k", 980 → "980". */
export function tokens(n: number): string {
  return n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)}M` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

/** A cost in USD, with the precision small sums need: 0.01011 → "$0.0101". */
export function dollars(cost: number): string {
  return cost >= 1 ? `$${cost.toFixed(2)}` : `$${cost.toPrecision(3).replace(/0+$/, "").replace(/\.$/, "")}`;
}

/** A run's tokens and, when priced, its cost: "4.0k tokens · $0.0101". */
export function usageText(u: { total: number; cost?: number | undefined }): string {
  return `${tokens(u.total)} tokens${u.cost ? ` · ${dollars(u.cost)}` : ""}`;
}

/** The output lines for the queued prompts a run ended without reading, so that none is lost; "" when none. */
export function unread(r: RunResult): string {
  if (r.status === "queued" || !r.queued?.length) {
    return "";
  }
  return r.queued.map((p) => `  not read by the ${r.status} run: ${p}\n`).join("");
}

/** The message after agent.switchProject. */
export function switched(r: ResultOf<"agent.switchProject">): string {
  return `Session ${r.session} now works on project ${r.project}.`;
}

/** A quick-pick item for a running background process of agent.processes. */
export function processItem(p: ProcessInfo): { label: string; description: string } {
  return { label: `$(debug-stop) ${p.id}  ${p.command}`, description: `${p.project} · session ${p.session} · since ${p.started}` };
}

/** The message after agent.stopProcess of process id of session. */
export function stoppedProcess(a: { session: string; id: string }, r: ResultOf<"agent.stopProcess">): string {
  return `Background process ${a.id} of session ${a.session} ${r.stopped ? "stopped" : "not stopped"}.`;
}

/** The message after agent.deleteSession of session. */
export function deleted(session: string, r: ResultOf<"agent.deleteSession">): string {
  return r.deleted ? `Deleted session ${session}.` : `Session ${session} was already gone.`;
}

/** A quick-pick item for a model of agent.models; chosen is the model this workspace picked ("" for none). */
export function modelItem(m: ModelInfo, r: ModelsResult, chosen: string): { label: string; description: string; detail?: string } {
  const marks = [m.id === chosen && "selected", m.id === r.current && "the server's default"].filter(Boolean).join(", ");
  return { label: m.id, description: marks, ...(m.ownedBy && { detail: m.ownedBy }) };
}

/** A quick-pick item for a session. */
export function sessionItem(s: SessionInfo): { label: string; description: string; detail: string } {
  return {
    label: s.title || s.session,
    description: [s.status, s.project, s.model, s.edits && `${s.edits} mode`, s.notStored && "not stored"].filter(Boolean).join(" · "),
    detail: `${s.session} · ${s.messages} messages · updated ${when(s.updated)}`,
  };
}

/**
 * A quick-pick item for a project: its stack (language and version, further
 * manifest types, package manager) and branch, then its path, the build and
 * test commands the agent runs without asking, and its sandbox in a few words.
 */
export function projectItem(p: ProjectInfo): { label: string; description: string; detail: string } {
  const s = p.techStack;
  const language = [s.language, s.languageVersion].filter(Boolean).join(" ");
  const also = s.others?.length ? ` (also ${s.others.join(", ")})` : "";
  return {
    label: p.name,
    description: [language + also, s.packageManager, p.gitBranch].filter(Boolean).join(" · "),
    detail: [p.path, s.buildCommand && `build: ${s.buildCommand}`, s.testCommand && `test: ${s.testCommand}`, sandboxSummary(p.sandbox)].filter(Boolean).join(" · "),
  };
}

/** A project's sandbox in a few words: its mode and network, or why nothing is enforced. */
export function sandboxSummary(s: SandboxReport): string {
  if (s.enforced.length === 0) {
    return `not sandboxed${s.notEnforced?.length ? `: ${s.notEnforced[0]}` : ""}`;
  }
  return `sandbox ${s.mode} · ${network(s)}`;
}

function network(s: SandboxReport): string {
  return s.network ? "network allowed" : "no network";
}

/** The result of agent.projects as Markdown: each project's item, then its full sandbox report. */
export function projectsReport(projects: ProjectInfo[]): string {
  const out = ["# Projects"];
  for (const p of projects) {
    const item = projectItem(p);
    const s = p.sandbox;
    out.push("", `## ${p.name}`, "", item.description, "", item.detail, "", "### Sandbox", "");
    const isolation = s.isolation && s.isolation !== "none" ? ` · isolation ${s.isolation}` : "";
    out.push(`mode ${s.mode}${isolation} · ${s.landlockABI ? `Landlock ABI ${s.landlockABI}` : "no Landlock"} · ${network(s)}`);
    const list = (title: string, items: string[] | undefined, show = (i: string) => i) => {
      if (items?.length) {
        out.push("", `${title}:`, "", ...items.map((i) => `- ${show(i)}`));
      }
    };
    list("Enforced", s.enforced);
    list("Not enforced", s.notEnforced);
    list("Writable", s.writable, inlineCode);
    if (p.language) {
      out.push("", "### Language intelligence", "", languageLine(p.language));
    }
    const d = p.context.diagnostics;
    if (d) {
      out.push("", `Latest diagnostics${d.server ? ` (${d.server})` : ""}: ${d.errors} errors, ${d.warnings} warnings in ${d.files} files`);
    }
  }
  return out.join("\n") + "\n";
}

/** What answers a project's language questions (agent.projects' language), in a sentence. */
export function languageLine(l: ProjectInfo["language"]): string {
  switch (l?.by) {
    case "editor":
      return "VS Code's language features answer the agent (its diagnostics after each edit, definitions, references, hovers, symbols).";
    case "agent-lsp":
      return `agent-lsp's own ${inlineCode(l.command ?? l.server ?? "")}: ${l.state}${l.note ? ` (${l.note})` : ""}`;
    case "none":
      return `No language server${l.note ? `: ${l.note}` : ""}.`;
  }
  return "";
}

/** How a source of MCP servers reads in the report. */
const mcpSources: Record<string, string> = {
  user: "your mcp.json",
  editor: "the agentLsp.mcpServers setting",
  flag: "an mcpConfigFiles file",
  project: "the repository's .mcp.json",
};

/** The result of agent.mcp as Markdown: each project's servers, their status, tools and where they are defined. */
export function mcpReport(projects: McpProject[]): string {
  const out = ["# MCP servers"];
  for (const p of projects) {
    out.push("", `## ${p.project}`, "", inlineCode(p.root), "");
    if (p.servers.length === 0) {
      out.push("No MCP servers: add them to the agentLsp.mcpServers setting, your `~/.config/agent-lsp/mcp.json` or the repository's `.mcp.json`.");
      continue;
    }
    for (const s of p.servers) {
      const tools = s.tools < 0 ? "tools not listed yet" : `${s.tools} tool${s.tools === 1 ? "" : "s"}`;
      out.push(`- ${inlineCode(s.name)} · ${s.status} · ${tools} · ${s.transport} · from ${mcpSources[s.source] ?? s.source} (${inlineCode(s.origin)})`);
      if (s.reason) {
        out.push(`  - ${s.reason}`);
      }
      if (s.withheld?.length) {
        out.push(`  - left out to fit the context: ${s.withheld.map(inlineCode).join(", ")}`);
      }
    }
  }
  return out.join("\n") + "\n";
}

function when(ts: string): string {
  const d = new Date(ts);
  return isNaN(d.getTime()) ? ts : d.toLocaleString();
}

const roleHeading: Record<string, string> = { human: "You", ai: "Agent", system: "System" };

/** The scheme of the session documents (markdownDocs.ts, served by Agent: Show Session). */
export const sessionScheme = "agent-session";

/** The (decoded) path of a session's transcript document, or of one subagent's of it. */
export function sessionDocPath(session: string, context?: string): string {
  return `/${session}${context ? "/" + context : ""}.md`;
}

/** The session and subagent context of a transcript document's (decoded) path. */
export function parseSessionDocPath(path: string): { session: string; context?: string } {
  const m = /^\/?([^/]*)(?:\/(.*))?\.md$/.exec(path);
  if (!m) {
    return { session: path.replace(/^\//, "") };
  }
  const [, session = "", context] = m;
  return context ? { session, context } : { session };
}

/** The link (an encoded URI) that opens a transcript document. */
export function sessionDocLink(session: string, context?: string): string {
  return `${sessionScheme}:/${encodeURIComponent(session)}${context ? "/" + encodeURIComponent(context) : ""}.md`;
}

/** A subagent's status in words. */
function subagentStatus(s: SubagentStatus): string {
  return s || "not started";
}

/** A session's transcript as Markdown, or a subagent's (d.context), with the subagents it started, each linked to its own. */
export function transcript(d: SessionDetail): string {
  const out: string[] = d.context
    ? [`# Subagent: ${oneLine(d.title || d.context, 120)}`, "", `Subagent \`${d.context}\` of session [\`${d.session}\`](${sessionDocLink(d.session)}) · project **${d.project}** · ${subagentStatus(d.status)}`]
    : [`# ${d.title || "Session " + d.session}`, "", `Session \`${d.session}\` · project **${d.project}** · ${subagentStatus(d.status)}`];
  if (d.subagents?.length) {
    out.push("", "## Subagents", "");
    for (const a of d.subagents) {
      out.push(`- [${linkText(a.task || a.contextId)}](${sessionDocLink(d.session, a.contextId)}) · ${subagentStatus(a.status)} · \`${a.contextId}\``);
    }
  }
  const calls = new Map<string, string>();
  for (const m of d.messages ?? []) {
    out.push("");
    if (m.role === "tool") {
      out.push(`#### ${calls.get(m.toolCallId ?? "") ?? "tool"} result`, "", fence(m.content));
      continue;
    }
    out.push(`## ${roleHeading[m.role] ?? m.role}`);
    if (m.content) {
      out.push("", m.content);
    }
    for (const c of m.toolCalls ?? []) {
      calls.set(c.id, c.name);
      out.push("", `- calls \`${c.name}\` ${inlineCode(c.args)}`);
    }
  }
  return out.join("\n") + "\n";
}

function fence(text: string): string {
  let f = "```";
  while (text.includes(f)) {
    f += "`";
  }
  return `${f}\n${text}\n${f}`;
}

/** text on one line, at most n characters. */
function oneLine(text: string, n: number): string {
  const t = text.replace(/\s+/g, " ").trim();
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

/** text as the text of a Markdown link, on one line. */
function linkText(text: string): string {
  return oneLine(text, 120).replace(/[\\[\]]/g, (c) => "\\" + c);
}

function inlineCode(text: string): string {
  const t = text.replace(/\s*\n\s*/g, " ");
  return t.includes("`") ? "`` " + t + " ``" : "`" + t + "`";
}

/** The message of an error thrown by the client or returned by the server. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : typeof e === "object" && e && "message" in e ? String(e.message) : String(e);
}
