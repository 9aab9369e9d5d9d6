// Line hunks between two texts, as the review shows an agent's edit: the
// minimal line diff (Myers, from the diff package) between the file's text and
// the proposal, each hunk a run of changed lines with its place in both; and
// the LSP text edits that turn one text into the other hunk by hunk. Texts are
// cut into lines that keep their line breaks, so a missing final newline and
// CRLF line endings survive every round trip. No vscode import.
import { diffArrays } from "diff";

/** An LSP position (0-based line, UTF-16 character). */
export interface Pos {
  line: number;
  character: number;
}

/** An LSP text edit. */
export interface LspTextEdit {
  range: { start: Pos; end: Pos };
  newText: string;
}

/**
 * One hunk: lines from..to-1 (0-based) of the old text are replaced by
 * lines, which are lines at..at+lines.length-1 of the new text. from == to
 * when the hunk only adds lines (before old line from); lines is empty when it
 * only removes.
 */
export interface Hunk {
  from: number;
  to: number;
  at: number;
  old: string[];
  lines: string[];
}

/** The lines of text, each with its line break; the last has none when text does not end with one; "" has none. */
export function splitLines(text: string): string[] {
  return text === "" ? [] : text.split(/(?<=\n)/);
}

/** The hunks that turn text old into text new, in order. */
export function between(old: string, neu: string): Hunk[] {
  const a = splitLines(old);
  const b = splitLines(neu);
  const out: Hunk[] = [];
  let i = 0;
  let j = 0;
  let open: Hunk | undefined;
  for (const c of diffArrays(a, b)) {
    if (!c.added && !c.removed) {
      open = undefined;
      i += c.count;
      j += c.count;
      continue;
    }
    if (!open) {
      open = { from: i, to: i, at: j, old: [], lines: [] };
      out.push(open);
    }
    if (c.removed) {
      open.old.push(...c.value);
      i += c.count;
      open.to = i;
    } else {
      open.lines.push(...c.value);
      j += c.count;
    }
  }
  return out;
}

/** The position where line k of lines starts; k == lines.length is the end of the text. */
export function lineStart(lines: string[], k: number): Pos {
  const last = lines.at(-1);
  if (k < lines.length || last === undefined) {
    return { line: k, character: 0 };
  }
  return last.endsWith("\n") ? { line: k, character: 0 } : { line: k - 1, character: last.length };
}

/** The text edits, one per hunk, that turn text old into text new. */
export function editsBetween(old: string, neu: string): LspTextEdit[] {
  const a = splitLines(old);
  return between(old, neu).map((h) => ({ range: { start: lineStart(a, h.from), end: lineStart(a, h.to) }, newText: h.lines.join("") }));
}

/** The edit of text (whose lines are lines) that puts hunk h's old lines back in the new text. */
export function revertEdit(newLines: string[], h: Hunk): LspTextEdit {
  return { range: { start: lineStart(newLines, h.at), end: lineStart(newLines, h.at + h.lines.length) }, newText: h.old.join("") };
}

/** A hunk's identity while the texts around it change: where it is in the old text and what it puts there. */
export function hunkKey(h: Hunk): string {
  return `${h.from}-${h.to}:${h.lines.join("")}`;
}

/** Where a hunk is in the new text, as people name it: "line 7", "lines 7-9", or where it removes lines, "after line 6". */
export function hunkLines(h: Hunk): string {
  if (h.lines.length === 0) {
    return h.at === 0 ? "at the top" : `after line ${h.at}`;
  }
  return h.lines.length === 1 ? `line ${h.at + 1}` : `lines ${h.at + 1}-${h.at + h.lines.length}`;
}

/**
 * Applies LSP text edits to text (positions in UTF-16 code units, lines
 * broken at "\n"; a character past a line's end is its end). Edits at the
 * same place apply in their order.
 */
export function applyTextEdits(text: string, edits: LspTextEdit[]): string {
  const starts = [0];
  for (let k = text.indexOf("\n"); k >= 0; k = text.indexOf("\n", k + 1)) {
    starts.push(k + 1);
  }
  const offset = (p: Pos) => {
    const start = starts[p.line];
    if (start === undefined) {
      return text.length;
    }
    const next = starts[p.line + 1];
    let end = next === undefined ? text.length : next - 1;
    if (end > start && text[end - 1] === "\r" && end < text.length) {
      end--; // a CRLF line's text ends before its \r
    }
    return Math.min(start + p.character, end);
  };
  const sorted = edits.map((e, i) => ({ s: offset(e.range.start), e: offset(e.range.end), text: e.newText, i }));
  sorted.sort((x, y) => y.s - x.s || y.i - x.i);
  let out = text;
  for (const e of sorted) {
    out = out.slice(0, e.s) + e.text + out.slice(Math.max(e.s, e.e));
  }
  return out;
}
