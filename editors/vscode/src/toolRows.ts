// The chat's tool rows: what a tool call shows, from its name, its arguments
// (the model's JSON) and its end (tool.end's ok, summary and output, or the
// stored tool message). Each tool kind has its row: an edit is a small
// unified diff with one element per line, a command its command line, exit
// code and the output's last lines, any other tool its target and result.
// The status words agree with what the model was told: a command that ran
// and exited non-zero is "exit 1" (it ran), not a failed tool; an edit the
// user rejected in the review is "rejected by you". No vscode import.
import { structuredPatch } from "diff";
import { escapeHtml } from "./markdown";

/** How a tool call ended, as the chat has it: live from tool.end, or from a stored tool message. */
export interface ToolEnd {
  /** False for an error result. */
  ok: boolean;
  /** tool.end's few words ("" for a stored one). */
  summary: string;
  /** The end of the result the model got (tool.end's output), or the whole stored result. */
  output: string;
}

/** One tool call of the transcript. */
export interface ToolRow {
  id: string;
  name: string;
  /** The model's raw JSON arguments. */
  args: string;
  /** The subagent that called it, if one did. */
  sub?: string | undefined;
  end?: ToolEnd;
  /** The file an edit changed, once its edit event named it. */
  uri?: string;
}

/** The row's status: its mark, its words and its class (the page colors by it). */
export interface Status {
  mark: string;
  words: string;
  kind: "running" | "ok" | "exit" | "failed" | "rejected" | "changed";
}

/** The arguments of a tool call as an object; {} when they are not a JSON object. */
export function parseArgs(args: string): Record<string, unknown> {
  try {
    const a = JSON.parse(args) as unknown;
    return a && typeof a === "object" && !Array.isArray(a) ? (a as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function str(a: Record<string, unknown>, key: string): string | undefined {
  return typeof a[key] === "string" ? a[key] : undefined;
}

/** The target a tool call works on, from its JSON arguments: a path, a command, a pattern... */
export function toolTarget(args: string): string {
  const a = parseArgs(args);
  for (const k of ["path", "command", "pattern", "task", "project"]) {
    const v = str(a, k);
    if (v !== undefined) {
      return v;
    }
  }
  return "";
}

/** The exit code of a command that ran to its end, from its summary or its result's first lines; undefined when it did not run or was cut off. */
export function exitCode(end: ToolEnd): number | undefined {
  const m = /: exit status (\d+)$/.exec(end.summary) ?? /^exit status (\d+)\b/.exec(commandParts(end.output).header.at(-1) ?? "");
  return m ? Number(m[1]) : undefined;
}

/**
 * A run_command result split into its header (notes, then how the command
 * ended: "exit status N", "timed out after ...", "could not run: ...") and
 * the output after the "$ command" line; a result cut before its header is
 * all output.
 */
export function commandParts(result: string): { header: string[]; output: string[] } {
  const lines = result.split("\n");
  const dollar = lines.findIndex((l) => l.startsWith("$ "));
  if (dollar > 0 && /^(exit status \d+|timed out after|could not run)/.test(lines[dollar - 1] ?? "")) {
    return { header: lines.slice(0, dollar), output: lines.slice(dollar + 1) };
  }
  return { header: [], output: lines };
}

/** The refusals the editors word for an edit the user turned down in a review (docs/protocol.md, Edits). */
const rejectedInReview = /\((rejected by the user in review|every hunk was dropped in the review)\)/;

/** The row's status: running, done, a command's exit code, an edit rejected or changed by the user, or failed with why. */
export function status(row: ToolRow): Status {
  const end = row.end;
  if (!end) {
    return { mark: "⟳", words: "running", kind: "running" };
  }
  if (row.name === "run_command") {
    const code = exitCode(end);
    if (code !== undefined) {
      return code === 0 ? { mark: "✓", words: "exit 0", kind: "ok" } : { mark: "●", words: `exit ${code}`, kind: "exit" };
    }
  }
  if (end.ok) {
    return { mark: "✓", words: end.summary || firstLine(end.output), kind: "ok" };
  }
  if (rejectedInReview.test(end.output)) {
    return { mark: "⊘", words: "rejected by you", kind: "rejected" };
  }
  if (/was applied with changes by the user/.test(end.output)) {
    return { mark: "✓", words: "applied with your changes", kind: "changed" };
  }
  return { mark: "✗", words: end.summary || firstLine(end.output.replace(/^error:\s*/, "")), kind: "failed" };
}

/** A diff line of an edit row. */
export interface DiffLine {
  kind: "add" | "del" | "ctx" | "gap";
  text: string;
}

/** Most lines an edit row shows; the rest is counted. */
export const diffLimit = 80;

/**
 * The diff an edit_file or create_file call proposes, from its arguments:
 * old_text against new_text with three lines of context, or the new lines
 * (a line-range edit names only what replaces the lines; a new file is all
 * new). Undefined for other tools.
 */
export function editDiff(name: string, args: string): { lines: DiffLine[]; note: string } | undefined {
  const a = parseArgs(args);
  if (name === "create_file") {
    return { lines: added(str(a, "content") ?? ""), note: "new file" };
  }
  if (name !== "edit_file") {
    return undefined;
  }
  const neu = str(a, "new_text") ?? "";
  const old = str(a, "old_text");
  if (old === undefined) {
    const start = a["start_line"];
    const end = a["end_line"];
    const from = typeof start === "number" ? start : undefined;
    const to = typeof end === "number" ? end : from;
    return { lines: added(neu), note: from ? `replaces line${to && to !== from ? `s ${from}–${to}` : ` ${from}`}` : "" };
  }
  const lines: DiffLine[] = [];
  const patch = structuredPatch("a", "b", withNewline(old), withNewline(neu), "", "", { context: 3 });
  patch.hunks.forEach((h, i) => {
    if (i > 0) {
      lines.push({ kind: "gap", text: "⋯" });
    }
    for (const l of h.lines) {
      if (l.startsWith("\\")) {
        continue; // "\ No newline at end of file": the snippets are not whole files
      }
      lines.push({ kind: l[0] === "+" ? "add" : l[0] === "-" ? "del" : "ctx", text: l.slice(1) });
    }
  });
  return { lines, note: "" };
}

function withNewline(s: string): string {
  return s.endsWith("\n") ? s : s + "\n";
}

function added(text: string): DiffLine[] {
  return text === ""
    ? []
    : text
        .replace(/\n$/, "")
        .split("\n")
        .map((t) => ({ kind: "add" as const, text: t }));
}

const signs = { add: "+", del: "-", ctx: " ", gap: "" };

/** The diff as HTML: one element per line, marked add, del, ctx or gap; past diffLimit lines, how many more. */
export function diffHtml(lines: DiffLine[]): string {
  const shown = lines.slice(0, diffLimit).map((l) => `<div class="ln ${l.kind}">${escapeHtml(signs[l.kind] + l.text)}</div>`);
  if (lines.length > diffLimit) {
    shown.push(`<div class="ln gap">⋯ ${lines.length - diffLimit} more lines</div>`);
  }
  return `<div class="diff">${shown.join("")}</div>`;
}

/** The row as HTML: a collapsible line with its status, its details below (a diff, a command's output, the arguments). */
export function toolHtml(row: ToolRow): string {
  const s = status(row);
  const who = row.sub ? `<span class="note">[${escapeHtml(row.sub)}]</span> ` : "";
  const a = parseArgs(row.args);
  const words = s.words ? ` <span class="status">${escapeHtml(s.words)}</span>` : "";
  const head = (what: string, open: boolean, body: string) => `<details class="tool ${s.kind}"${open ? " open" : ""}><summary>${who}<span class="mark">${s.mark}</span> ${what}${words}</summary>${body}</details>`;
  const edit = editDiff(row.name, row.args);
  if (edit) {
    const path = str(a, "path") ?? "";
    const link = row.uri ? `<a href="#" data-open="${escapeHtml(row.uri)}">${escapeHtml(path)}</a>` : `<a href="#" data-path="${escapeHtml(path)}">${escapeHtml(path)}</a>`;
    const note = edit.note ? ` <span class="note">${escapeHtml(edit.note)}</span>` : "";
    return head(`<b>${row.name === "create_file" ? "create" : "edit"}</b> ${link}${note}`, edit.lines.length <= 20, diffHtml(edit.lines) + failure(row, s));
  }
  if (row.name === "run_command") {
    const command = str(a, "command") ?? "";
    const out = row.end ? commandOutput(row.end.output) : "";
    return head(`<b>$</b> <code>${escapeHtml(command)}</code>`, s.kind === "exit" || s.kind === "failed", out ? `<pre class="output">${escapeHtml(out)}</pre>` : "");
  }
  const target = toolTarget(row.args);
  const result = row.end?.output ? `<pre class="output">${escapeHtml(lastLines(row.end.output, 20))}</pre>` : "";
  return head(`<b>${escapeHtml(row.name)}</b> ${escapeHtml(target)}`, false, `<pre class="args">${escapeHtml(pretty(row.args))}</pre>${result}`);
}

/** Why an edit did not land as proposed, under its diff; "" when it did. */
function failure(row: ToolRow, s: Status): string {
  if (!row.end || s.kind === "ok" || s.kind === "running") {
    return "";
  }
  return `<div class="why">${escapeHtml(firstLine(row.end.output.replace(/^error:\s*/, "")))}</div>`;
}

/** A command's output without the result's header: its last 20 lines. */
export function commandOutput(result: string): string {
  return lastLines(commandParts(result).output.join("\n"), 20);
}

function lastLines(text: string, n: number): string {
  const lines = text.replace(/\s+$/, "").split("\n");
  return (lines.length > n ? ["⋯", ...lines.slice(-n)] : lines).join("\n");
}

function pretty(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

function firstLine(s: string): string {
  const l = s.trim().split("\n")[0] ?? "";
  return l.length > 160 ? l.slice(0, 159) + "…" : l;
}
