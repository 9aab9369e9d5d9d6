// Rewind in the chat (docs/rewind.md): each prompt the chat shows offers
// Rewind… (a quick pick of the scope: conversation and files, conversation
// only, files only, each listing the files that prompt and the later ones
// changed), Changes Since Here (the files changed since that checkpoint, each
// opened in the editor's diff view: its content before the prompt against
// the current one) and Fork From Here (a new session with the conversation
// before the prompt, shown in the chat); the last prompt also offers Retry.
// A prompt of the chat is matched to its checkpoint (agent.checkpoints) by
// its place among the prompts and its first line. The server's refusals (a
// running session, pruned contents, a file outside the project) show as
// they are worded. No state of its own: the chat passes what it shows.
import * as vscode from "vscode";
import type { Ctx } from "./ctx";
import { errorText } from "./format";
import { requests, type Checkpoint, type CheckpointFile, type CheckpointFileResult, type RewindResult, type RewindScope } from "./protocol";

/** What a prompt's buttons ask for. */
export type RewindAction = "rewind" | "changes" | "fork" | "retry";

/** The chat's part in a rewind: it shows a session again (after a conversation rewind, or a fork). */
export interface RewindHost {
  show(session: string): Promise<void>;
}

/** What the chat shows when a prompt's button is pressed, and how it runs a retry. */
export interface ChatRewindHost extends RewindHost {
  /** The session shown; undefined for a new chat whose run has not started. */
  session: string | undefined;
  /** The prompts the chat shows, in order. */
  prompts: readonly string[];
  /** True while a run of this window works on session. */
  running(session: string): boolean;
  retry(session: string): Promise<void>;
}

/** Runs a prompt button's action for the prompt at index i of the chat; a refusal is thrown with what to do instead. */
export async function rewindAction(ctx: Ctx, chat: ChatRewindHost, action: RewindAction, i: number): Promise<void> {
  const session = chat.session;
  if (!session) {
    throw new Error("This prompt's session has not started yet: wait for its run to begin.");
  }
  if (action !== "changes" && chat.running(session)) {
    throw new Error(`The session is running: Stop it first, then ${action === "fork" ? "fork" : action === "retry" ? "retry" : "rewind"}.`);
  }
  const { prompts } = chat;
  switch (action) {
    case "rewind":
      return rewind(ctx, chat, session, prompts, i);
    case "changes":
      return changesSince(ctx, session, prompts, i);
    case "fork":
      await fork(ctx, chat, session, prompts, i);
      return;
    case "retry":
      return chat.retry(session);
    default:
      action satisfies never;
      throw new Error(`unknown rewind action ${JSON.stringify(action)}`);
  }
}

/** The URI scheme of a file's content as it was at a checkpoint (the left side of Changes Since Here). */
export const checkpointScheme = "agent-lsp-checkpoint";

/** The first line of a prompt, trimmed, without a trailing ellipsis: how the two sides compare. */
function firstLine(prompt: string): string {
  return (prompt.trim().split("\n")[0] ?? "").trim().replace(/…$/, "");
}

function samePrompt(a: string, b: string): boolean {
  const x = firstLine(a);
  const y = firstLine(b);
  return x === y || (x.length > 0 && y.length > 0 && (x.startsWith(y) || y.startsWith(x)));
}

/**
 * The checkpoint of the prompt at index i of shown (the prompts the chat
 * shows, in order): counted from the end (the chat may show fewer prompts
 * than the session has, never more checkpoints than prompts), checked by
 * its first line; else the same-numbered occurrence of that first line.
 * Undefined when none matches.
 */
export function matchCheckpoint(list: readonly Checkpoint[], shown: readonly string[], i: number): Checkpoint | undefined {
  const prompt = shown[i];
  if (prompt === undefined) {
    return undefined;
  }
  const sorted = [...list].sort((a, b) => a.checkpoint - b.checkpoint);
  const byPlace = sorted[sorted.length - (shown.length - i)];
  if (byPlace && samePrompt(byPlace.prompt, prompt)) {
    return byPlace;
  }
  const nth = shown.slice(0, i + 1).filter((p) => samePrompt(p, prompt)).length;
  return sorted.filter((c) => samePrompt(c.prompt, prompt))[nth - 1];
}

/** The files checkpoint n's prompt and every later one changed, each once (the latest listing of it), by path. */
export function filesSince(list: readonly Checkpoint[], n: number): CheckpointFile[] {
  const byUri = new Map<string, CheckpointFile>();
  for (const c of [...list].sort((a, b) => a.checkpoint - b.checkpoint)) {
    if (c.checkpoint < n) {
      continue;
    }
    for (const f of c.files) {
      const was = byUri.get(f.uri);
      if (!was) {
        byUri.set(f.uri, f);
        continue;
      }
      const reason = was.reason ?? f.reason; // the first reason a file cannot be restored
      byUri.set(f.uri, { ...f, added: was.added + f.added, removed: was.removed + f.removed, restorable: was.restorable && f.restorable, ...(reason !== undefined && { reason }) });
    }
  }
  return [...byUri.values()].sort((a, b) => a.path.localeCompare(b.path));
}

/** What checkpoint n and the later ones could not record, each once. */
export function notesSince(list: readonly Checkpoint[], n: number): string[] {
  return [...new Set(list.filter((c) => c.checkpoint >= n).flatMap((c) => c.notes ?? []))];
}

/** A file's line in a list: "greet.go +3 −1", and why it cannot be restored. */
export function fileLabel(f: CheckpointFile): string {
  return `${f.path} +${f.added} −${f.removed}${f.restorable ? "" : ` (${f.reason ?? "not restorable"})`}`;
}

/** A scope of the Rewind… quick pick. */
export interface ScopeItem extends vscode.QuickPickItem {
  scope: RewindScope;
}

/** The Rewind… quick pick's items for checkpoint n: the three scopes, those that restore files listing them and what was not recorded. */
export function scopeItems(n: number, files: readonly CheckpointFile[], notes: readonly string[] = []): ScopeItem[] {
  const list = [files.length ? files.map(fileLabel).join(", ") : "no file changed since", ...notes].join("; ");
  const count = files.length === 1 ? "1 file goes" : `${files.length} files go`;
  return [
    { scope: "both", label: "Conversation and files", description: `prompt ${n} and later leave the conversation; ${count} back`, detail: list },
    { scope: "conversation", label: "Conversation only", description: `prompt ${n} and later leave the conversation; files stay as they are` },
    { scope: "files", label: "Files only", description: `${count} back to before prompt ${n}; the conversation stays`, detail: list },
  ];
}

/** What a rewind did, in one sentence per kind, for a notification; warn when something was not restored as asked. */
export function rewindSummary(r: RewindResult, scope: RewindScope): { text: string; warn: boolean } {
  const names = (l: readonly { path: string }[]) => l.map((f) => f.path).join(", ");
  const parts = [`Rewound to before prompt ${r.checkpoint}:`];
  if (r.undone) {
    parts[0] = `Undid the rewind to before prompt ${r.checkpoint}:`;
    if (r.conversation) parts.push(`prompt ${r.checkpoint} and later are back in the conversation.`);
    if (r.restored.length || !r.conversation) parts.push(r.restored.length ? `put back ${names(r.restored)}.` : "no file needed putting back.");
  }
  if (scope !== "files" && !r.undone) {
    parts.push(r.conversation ? `prompt ${r.checkpoint} and later left the conversation (kept as a branch).` : "the conversation did not change.");
  }
  if (scope !== "conversation" && !r.undone) {
    parts.push(r.restored.length ? `restored ${names(r.restored)}.` : "no file needed restoring.");
  }
  const kept = r.conflicts.filter((c) => c.kept);
  const overwritten = r.conflicts.filter((c) => !c.kept);
  if (overwritten.length) parts.push(`Restored over your changes: ${names(overwritten)}.`);
  if (kept.length) parts.push(`Kept your changes: ${names(kept)}.`);
  if (r.notRestorable.length) parts.push(`Not restorable: ${r.notRestorable.map((f) => `${f.path} (${f.reason})`).join(", ")}.`);
  return { text: parts.join(" "), warn: kept.length > 0 || r.notRestorable.length > 0 };
}

/** The output's line for a fork. */
export function forkedLine(a: { session: string; checkpoint: number }, r: { session: string }): string {
  return `⑂ forked ${a.session} before prompt ${a.checkpoint}: ${r.session}`;
}

/** The checkpoint of the i-th prompt of shown in session, from the server; a clear error when it has none. */
async function checkpointOf(ctx: Ctx, session: string, shown: readonly string[], i: number): Promise<{ at: Checkpoint; list: Checkpoint[] }> {
  const { checkpoints } = await (await ctx.ready()).send(requests.checkpoints, { session });
  const at = matchCheckpoint(checkpoints, shown, i);
  if (!at) {
    throw new Error(`This prompt has no checkpoint: it was sent before checkpoints were kept, or its history was pruned (the session has ${checkpoints.length}).`);
  }
  return { at, list: checkpoints };
}

/** Rewind…: asks the scope, rewinds, says what happened; the chat shows the session again after a conversation rewind. */
export async function rewind(ctx: Ctx, host: RewindHost, session: string, shown: readonly string[], i: number): Promise<void> {
  const { at, list } = await checkpointOf(ctx, session, shown, i);
  const files = filesSince(list, at.checkpoint);
  const pick = await vscode.window.showQuickPick(scopeItems(at.checkpoint, files, notesSince(list, at.checkpoint)), {
    title: `Rewind to before prompt ${at.checkpoint}: “${firstLine(at.prompt)}”`,
    placeHolder: "What goes back: the conversation, the files, or both",
  });
  if (!pick) {
    return;
  }
  const result = await (await ctx.ready()).send(requests.rewind, { session, checkpoint: at.checkpoint, restore: pick.scope });
  const { text, warn } = rewindSummary(result, pick.scope);
  ctx.output.appendLine(`↶ ${text}`);
  if (result.conversation) {
    await host.show(session);
  }
  void (warn ? vscode.window.showWarningMessage(text, undoButton) : vscode.window.showInformationMessage(text, undoButton)).then(async (choice) => {
    if (choice !== undoButton) return;
    try {
      await undoRewind(ctx, host, session);
    } catch (err) {
      void vscode.window.showErrorMessage(errorText(err));
    }
  });
}

/** The button of a rewind's notification that takes it back. */
export const undoButton = "Undo Rewind";

/** Undo Rewind: the session's newest rewind taken back (its files and conversation); the chat shows the session again. */
export async function undoRewind(ctx: Ctx, host: RewindHost, session: string): Promise<void> {
  const result = await (await ctx.ready()).send(requests.rewind, { session, undo: true });
  const { text, warn } = rewindSummary(result, "both");
  ctx.output.appendLine(`↷ ${text}`);
  if (result.conversation) {
    await host.show(session);
  }
  void (warn ? vscode.window.showWarningMessage(text) : vscode.window.showInformationMessage(text));
}

/** Fork From Here: a new session with the conversation before the prompt, shown in the chat. */
export async function fork(ctx: Ctx, host: RewindHost, session: string, shown: readonly string[], i: number): Promise<string> {
  const { at } = await checkpointOf(ctx, session, shown, i);
  const forked = await (await ctx.ready()).send(requests.fork, { session, checkpoint: at.checkpoint });
  ctx.output.appendLine(forkedLine({ session, checkpoint: at.checkpoint }, forked));
  await host.show(forked.session);
  return forked.session;
}

/** A file's URI at checkpoint n of session (checkpointScheme): what the diff's left side reads. */
export function checkpointUri(session: string, n: number, f: CheckpointFile): vscode.Uri {
  const query = new URLSearchParams({ session, checkpoint: String(n), uri: f.uri }).toString();
  return vscode.Uri.from({ scheme: checkpointScheme, path: "/" + f.path, query });
}

/** The diff's left side for agent.checkpointFile's answer about a file at path before prompt n, and the diff's title. */
export function beforeSide(path: string, n: number, r: CheckpointFileResult): { text: string; title: string } {
  return { text: r.exists ? (r.content ?? "") : "", title: `${path} (${r.exists ? `before prompt ${n}` : `created since prompt ${n}`} ↔ now)` };
}

/** The contents the diffs' left sides show, by their checkpointUri; a diff's tab reads it from here (checkpointContents). */
const contents = new Map<string, string>();

/** The provider of checkpointScheme's documents: the contents Changes Since Here read. */
export function registerCheckpointContents(): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(checkpointScheme, { provideTextDocumentContent: (uri) => contents.get(uri.toString()) ?? "" });
}

/** The file item of Changes Since Here. */
interface FileItem extends vscode.QuickPickItem {
  file: CheckpointFile;
}

/** Changes Since Here: the files changed since the prompt; the one picked opens as a diff (before the prompt ↔ now). */
export async function changesSince(ctx: Ctx, session: string, shown: readonly string[], i: number): Promise<void> {
  const { at, list } = await checkpointOf(ctx, session, shown, i);
  const files = filesSince(list, at.checkpoint);
  if (!files.length) {
    void vscode.window.showInformationMessage(`No file changed since prompt ${at.checkpoint}.`);
    return;
  }
  const only = files.length === 1 ? files[0] : undefined;
  const pick = only
    ? { file: only }
    : await vscode.window.showQuickPick<FileItem>(
        files.map((f) => ({ file: f, label: f.path, description: `+${f.added} −${f.removed}`, ...(f.restorable ? {} : { detail: f.reason ?? "not restorable" }) })),
        { title: `Changed since prompt ${at.checkpoint}: “${firstLine(at.prompt)}”`, placeHolder: "A file to compare with its content before the prompt" },
      );
  if (!pick) {
    return;
  }
  const f = pick.file;
  const now = vscode.Uri.parse(f.uri);
  let before: CheckpointFileResult;
  try {
    before = await (await ctx.ready()).send(requests.checkpointFile, { session, checkpoint: at.checkpoint, uri: f.uri });
  } catch (e) {
    await vscode.window.showTextDocument(now, { preview: false });
    void vscode.window.showInformationMessage(`${f.path} as it is now: its content before prompt ${at.checkpoint} cannot be shown (${errorText(e)}).`);
    return;
  }
  const left = checkpointUri(session, at.checkpoint, f);
  const side = beforeSide(f.path, at.checkpoint, before);
  contents.set(left.toString(), side.text);
  await vscode.commands.executeCommand("vscode.diff", left, now, side.title);
}
