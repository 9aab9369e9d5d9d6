// Text the extension shows: the output-channel transcript of agent/event,
// quick-pick items, session transcripts and the projects report as Markdown, run
// summaries and error messages. No vscode import.
import type { AgentEvent, ProjectInfo, ResultOf, RunResult, SandboxReport, SessionDetail, SessionInfo } from "./protocol";

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
        line(`── session ${s}${ev.project ? ` · project ${ev.project}` : ""}`);
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
        line(`${sub}  ${ev.ok ? "✓" : "✗"} ${ev.name}${ev.summary ? `: ${ev.summary}` : ""}`);
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
      case "run.end":
        line(`── ${ev.status}${ev.error ? `: ${ev.error}` : ""}`);
        break;
      default:
        ev satisfies never; // a kind added to AgentEvent needs its case here
    }
    return out;
  }
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

/** A one-line summary of a finished run, for a notification: counts, then what failed or the reply's first line. */
export function summary(r: RunResult): string {
  const edits = `${r.edits} edit${r.edits === 1 ? "" : "s"}`;
  const steps = `${r.steps} step${r.steps === 1 ? "" : "s"}`;
  const first = (r.error || r.reply).trim().split("\n")[0] ?? "";
  const short = first.length > 160 ? first.slice(0, 157) + "…" : first;
  return `Agent ${r.status} (${edits}, ${steps})${short ? ": " + short : ""}`;
}

/** The message after agent.switchProject. */
export function switched(r: ResultOf<"agent.switchProject">): string {
  return `Session ${r.session} now works on project ${r.project}.`;
}

/** The message after agent.deleteSession of session. */
export function deleted(session: string, r: ResultOf<"agent.deleteSession">): string {
  return r.deleted ? `Deleted session ${session}.` : `Session ${session} was already gone.`;
}

/** A quick-pick item for a session. */
export function sessionItem(s: SessionInfo): { label: string; description: string; detail: string } {
  return {
    label: s.title || s.session,
    description: `${s.status} · ${s.project}`,
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
    detail: [p.path, s.buildCommand && `build: ${s.buildCommand}`, s.testCommand && `test: ${s.testCommand}`, sandboxSummary(p.sandbox)]
      .filter(Boolean)
      .join(" · "),
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
    out.push(`mode ${s.mode} · ${s.landlockABI ? `Landlock ABI ${s.landlockABI}` : "no Landlock"} · ${network(s)}`);
    const list = (title: string, items: string[] | undefined, show = (i: string) => i) => {
      if (items?.length) {
        out.push("", `${title}:`, "", ...items.map((i) => `- ${show(i)}`));
      }
    };
    list("Enforced", s.enforced);
    list("Not enforced", s.notEnforced);
    list("Writable", s.writable, inlineCode);
  }
  return out.join("\n") + "\n";
}

function when(ts: string): string {
  const d = new Date(ts);
  return isNaN(d.getTime()) ? ts : d.toLocaleString();
}

const roleHeading: Record<string, string> = { human: "You", ai: "Agent", system: "System" };

/** A session's transcript as Markdown. */
export function transcript(d: SessionDetail): string {
  const out: string[] = [`# ${d.title || "Session " + d.session}`, "", `Session \`${d.session}\` · project **${d.project}** · ${d.status}`];
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

function inlineCode(text: string): string {
  const t = text.replace(/\s*\n\s*/g, " ");
  return t.includes("`") ? "`` " + t + " ``" : "`" + t + "`";
}

/** The message of an error thrown by the client or returned by the server. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : typeof e === "object" && e && "message" in e ? String((e as { message: unknown }).message) : String(e);
}
