// One agent edit under review, without the UI: the files it changes, each
// with its text when the review opened, the server's proposal and the
// proposal as the user has it now (hunks rejected, text typed); the hunks
// between the file and that proposal, each accepted or still pending; and the
// answer to the server once decided: what the user accepted, as a workspace
// edit (the edit as sent when the proposal is untouched, else only the hunks
// the user kept, with the version check kept), or the refusal in the words
// Neovim's review uses. No vscode import.
import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, ChangeAnnotation, WorkspaceEdit } from "vscode-languageclient";
import { applyTextEdits, between, editsBetween, hunkKey, type Hunk, type LspTextEdit } from "./hunks";

/** The refusals a review answers, as Neovim's review words them (the server quotes them to the model). */
export const refusals = {
  rejected: "rejected by the user in review",
  dropped: "every hunk was dropped in the review",
} as const;

/** The server's description ends with the edit's place in the queue when others wait: "... (1 of 3)". */
const queueSuffix = /\s*\((\d+) of (\d+)\)$/;

/** The change annotations of an edit that need the user's confirmation. */
export function confirmations(params: ApplyWorkspaceEditParams): ChangeAnnotation[] {
  return Object.values(params.edit.changeAnnotations ?? {}).filter((a) => a.needsConfirmation);
}

/** Why the edit needs confirmation (its annotations' descriptions without the queue place), "" when none does. */
export function why(params: ApplyWorkspaceEditParams): string {
  const out = new Set(confirmations(params).map((a) => (a.description ?? a.label).replace(queueSuffix, "")));
  return [...out].filter(Boolean).sort().join("; ");
}

/** The edit's place in the queue of edits waiting for confirmation, e.g. "1 of 3"; "" when none wait behind it. */
export function queuePlace(params: ApplyWorkspaceEditParams): string {
  for (const a of confirmations(params)) {
    const m = queueSuffix.exec(a.description ?? "");
    if (m) {
      return `${m[1]} of ${m[2]}`;
    }
  }
  return "";
}

/** True for an edit of a protected file (the server's description says "protected file: ..."): it is never accepted in bulk. */
export function isProtected(params: ApplyWorkspaceEditParams): boolean {
  return confirmations(params).some((a) => (a.description ?? "").startsWith("protected file:"));
}

/** One file of a review. */
export interface ReviewFile {
  /** The file's URI, as the server sent it. */
  uri: string;
  /** The edit creates the file. */
  create: boolean;
  /** The file's text when the review opened ("" for a file the edit creates). */
  original: string;
  /** The text accepting the edit as sent gives. */
  proposed: string;
  /** The proposal as the user has it now: what accepting gives. */
  current: string;
  /** The hunks (hunkKey) the user accepted; the others are pending. */
  accepted: Set<string>;
}

/** A hunk of a file and whether the user accepted it. */
export interface ReviewHunk extends Hunk {
  key: string;
  accepted: boolean;
}

type DocumentChange = NonNullable<WorkspaceEdit["documentChanges"]>[number];

/** The URIs the edit changes text of, each with its edits, in order (a CreateFile's own URI included). */
function textChanges(we: WorkspaceEdit): { uri: string; edits: LspTextEdit[]; create: boolean }[] {
  const out: { uri: string; edits: LspTextEdit[]; create: boolean }[] = [];
  const created = new Set<string>();
  for (const dc of we.documentChanges ?? []) {
    if ("kind" in dc) {
      if (dc.kind === "create") {
        created.add(dc.uri);
      }
    } else {
      out.push({ uri: dc.textDocument.uri, edits: dc.edits as LspTextEdit[], create: created.has(dc.textDocument.uri) });
    }
  }
  for (const [uri, edits] of Object.entries(we.changes ?? {})) {
    out.push({ uri, edits, create: false });
  }
  return out;
}

/** The files of params' edit, from read (a file's text now; "" for one the edit creates). */
export async function reviewFiles(params: ApplyWorkspaceEditParams, read: (uri: string, create: boolean) => Promise<string>): Promise<ReviewFile[]> {
  const files: ReviewFile[] = [];
  for (const ch of textChanges(params.edit)) {
    const original = await read(ch.uri, ch.create);
    const proposed = applyTextEdits(original, ch.edits);
    files.push({ uri: ch.uri, create: ch.create, original, proposed, current: proposed, accepted: new Set() });
  }
  return files;
}

/** The hunks of file f between its text and the proposal as it is now, each accepted or not. */
export function hunksOf(f: ReviewFile): ReviewHunk[] {
  return between(f.original, f.current).map((h) => {
    const key = hunkKey(h);
    return { ...h, key, accepted: f.accepted.has(key) };
  });
}

/** How many hunks of files wait for a decision. */
export function pending(files: ReviewFile[]): number {
  return files.reduce((n, f) => n + hunksOf(f).filter((h) => !h.accepted).length, 0);
}

/** The annotation-free copy of a document change (VS Code would ask again for an annotated one). */
function plain(dc: DocumentChange): DocumentChange {
  if ("kind" in dc) {
    const { annotationId: _, ...rest } = dc;
    return rest;
  }
  return { textDocument: dc.textDocument, edits: (dc.edits as LspTextEdit[]).map((e) => ({ range: e.range, newText: e.newText })) };
}

/**
 * The answer to params once the user decided: a refusal when they rejected
 * it or kept none of it; else the workspace edit that gives each file the
 * text the user accepted: the edit as sent (without its annotations) when
 * every proposal is untouched, else its resource operations and the hunks
 * between each file's text and the accepted one, with the edit's versions,
 * so that a document changed meanwhile is refused.
 */
export function decision(params: ApplyWorkspaceEditParams, files: ReviewFile[], accepted: boolean): { apply: ApplyWorkspaceEditParams } | { refuse: ApplyWorkspaceEditResult } {
  if (!accepted) {
    return { refuse: { applied: false, failureReason: refusals.rejected } };
  }
  if (files.every((f) => f.current === f.original && !f.create)) {
    return { refuse: { applied: false, failureReason: refusals.dropped } };
  }
  const base = { ...(params.label !== undefined && { label: params.label }), ...(params.metadata && { metadata: params.metadata }) };
  const asSent = files.every((f) => f.current === f.proposed);
  const byUri = new Map(files.map((f) => [f.uri, f]));
  const documentChanges: DocumentChange[] = [];
  for (const dc of params.edit.documentChanges ?? []) {
    const f = byUri.get("kind" in dc ? (dc.kind === "rename" ? dc.oldUri : dc.uri) : dc.textDocument.uri);
    if (asSent || !f || "kind" in dc) {
      documentChanges.push(plain(dc));
    } else if (f.current !== f.original) {
      documentChanges.push({ textDocument: dc.textDocument, edits: editsBetween(f.original, f.current) });
    }
  }
  const edit: WorkspaceEdit = params.edit.documentChanges ? { documentChanges } : {};
  if (params.edit.changes) {
    edit.changes = {};
    for (const [uri, edits] of Object.entries(params.edit.changes)) {
      const f = byUri.get(uri);
      if (!f) {
        continue; // every URI of the edit has its file (byUri is built from them)
      }
      edit.changes[uri] = asSent ? edits.map((e) => ({ range: e.range, newText: e.newText })) : editsBetween(f.original, f.current);
    }
  }
  return { apply: { ...base, edit } };
}
