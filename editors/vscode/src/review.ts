// The review of agent edits that need the user's confirmation (review mode, a
// protected file), instead of VS Code's refactor preview (which leaves such
// edits unticked, so its Apply applies nothing). Each edit opens as a diff
// editor per file: the file's text on the left, on the right the proposal,
// which the user may edit before accepting. Its hunks (a minimal line diff,
// hunks.ts) each carry Accept and Reject as CodeLens, as editor actions and
// keys, and as buttons in the chat: Reject puts the file's lines back in the
// proposal, Accept keeps them; once no hunk is left undecided the edit is
// answered with what the proposal holds. Accept Edit and Reject Edit decide
// the whole edit; Accept All and Reject All also decide the edits the agent's
// current step still sends (reviewBulk.ts; an accept never covers a
// protected file). What reaches the file is exactly the accepted proposal
// (reviewModel.ts); the server tells the model what differs from its edit.
import * as vscode from "vscode";
import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, WorkspaceMiddleware } from "vscode-languageclient";
import type { ReviewCard } from "./chatModel";
import type { CommandId } from "./commands";
import { revertEdit, splitLines, type LspTextEdit } from "./hunks";
import type { AgentEvent } from "./protocol";
import { Bulk, type BulkDecision } from "./reviewBulk";
import { confirmations, decision, hunksOf, isProtected, pending, queuePlace, reviewFiles, why, type ReviewFile, type ReviewHunk } from "./reviewModel";

type HandleApplyEdit = NonNullable<WorkspaceMiddleware["handleApplyEdit"]>;
type Next = Parameters<HandleApplyEdit>[1];

export const originalScheme = "agent-lsp-original";
export const proposalScheme = "agent-lsp-proposal";

/** How a review ended, as the chat and the transcript say it. */
export type ReviewOutcome = "accepted" | "accepted in part" | "rejected" | "not applied";

/** An edit under review. */
export interface Review {
  readonly id: number;
  readonly label: string;
  /** Why it needs confirmation (the server's description). */
  readonly why: string;
  /** Its place in the queue ("1 of 3"), "" when none wait behind it. */
  readonly place: string;
  readonly protected: boolean;
  readonly files: ReviewFile[];
  /** Per file: the diff's two sides. */
  readonly originals: vscode.Uri[];
  readonly proposals: vscode.Uri[];
  /** Set once decided. */
  outcome?: ReviewOutcome;
  /** Why it was not applied, for outcome "not applied" or "rejected". */
  reason?: string | undefined;
}

/** File i of review r with its diff's two sides; undefined past the last file. */
function sides(r: Review, i: number): { file: ReviewFile; original: vscode.Uri; proposal: vscode.Uri } | undefined {
  const [file, original, proposal] = [r.files[i], r.originals[i], r.proposals[i]];
  return file && original && proposal ? { file, original, proposal } : undefined;
}

interface Open {
  review: Review;
  params: ApplyWorkspaceEditParams;
  decide: (accepted: boolean) => void;
}

/** The reviews of this window: at most one from the server at a time, since it queues the others. */
export class Reviews implements vscode.Disposable {
  private open = new Map<number, Open>();
  private next = 0;
  private bulk = new Bulk();
  /** The texts the diffs show, by URI (scheme and path: both sides have one path): originals (read-only) and proposals (editable). */
  private texts = new Map<string, { text: Uint8Array; mtime: number }>();
  private changed = new vscode.EventEmitter<Review>();
  /** Fires when a review opens, changes (a hunk decided, the proposal edited) or ends. */
  readonly onDidChange = this.changed.event;
  private fileChanged = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  /** The review's item (its files), Accept All's and Reject All's. */
  private status: [vscode.StatusBarItem, vscode.StatusBarItem, vscode.StatusBarItem];
  private subs: vscode.Disposable[] = [];

  constructor(
    /** Appends a line to the Agent output. */
    private note: (line: string) => void,
    onEvent: vscode.Event<AgentEvent>,
    /** Fires when the last run of the window ends: no edit of theirs can come any more. */
    onIdle: vscode.Event<void>,
  ) {
    const item = (id: string, priority: number, command: CommandId, text: string, tooltip: string) => {
      const it = vscode.window.createStatusBarItem(id, vscode.StatusBarAlignment.Left, priority);
      Object.assign(it, { name: `agent-lsp ${text}`, command, text, tooltip });
      return it;
    };
    this.status = [
      item("agentLsp.review", 9, "agentLsp.showReview", "", ""),
      item("agentLsp.acceptAll", 8, "agentLsp.acceptAll", "$(check-all) Accept All", "Accept this edit and the others the agent's step is making (never a protected file's)"),
      item("agentLsp.rejectAll", 7, "agentLsp.rejectAll", "$(close-all) Reject All", "Reject this edit and the others the agent's step is making"),
    ];
    this.subs.push(
      this.changed,
      this.fileChanged,
      ...this.status,
      onEvent((ev) => this.bulk.event(ev)),
      onIdle(() => this.stale()),
      vscode.workspace.onDidChangeTextDocument((e) => this.edited(e.document)),
    );
  }

  /** Registers the diff's documents and the hunks' CodeLens. */
  register(): vscode.Disposable[] {
    const texts = this.texts;
    const read = (uri: vscode.Uri) => {
      const t = texts.get(key(uri));
      if (!t) {
        throw vscode.FileSystemError.FileNotFound(uri);
      }
      return t;
    };
    const proposals: vscode.FileSystemProvider = {
      onDidChangeFile: this.fileChanged.event,
      watch: () => new vscode.Disposable(() => {}),
      stat: (uri) => ({ type: vscode.FileType.File, ctime: 0, mtime: read(uri).mtime, size: read(uri).text.length }),
      readDirectory: () => [],
      createDirectory: () => {},
      readFile: (uri) => read(uri).text,
      writeFile: (uri, text) => {
        read(uri); // a review's proposal, never a new file
        texts.set(key(uri), { text, mtime: Date.now() });
      },
      delete: () => {},
      rename: () => {
        throw vscode.FileSystemError.NoPermissions("a proposal cannot be renamed");
      },
    };
    const lenses = new vscode.EventEmitter<void>();
    return [
      lenses,
      this.onDidChange(() => lenses.fire()),
      vscode.workspace.registerFileSystemProvider(proposalScheme, proposals, { isCaseSensitive: true }),
      vscode.workspace.registerTextDocumentContentProvider(originalScheme, {
        provideTextDocumentContent: (uri) => new TextDecoder().decode(texts.get(key(uri))?.text),
      }),
      vscode.languages.registerCodeLensProvider({ scheme: proposalScheme }, { onDidChangeCodeLenses: lenses.event, provideCodeLenses: (doc) => this.lenses(doc.uri) }),
    ];
  }

  /** The reviews open now, oldest first. */
  list(): Review[] {
    return [...this.open.values()].map((o) => o.review);
  }

  /** Review r as the chat shows it. */
  card(r: Review): ReviewCard {
    return {
      id: r.id,
      label: r.label,
      why: r.why,
      place: r.place,
      protected: r.protected,
      files: r.files.map((f, i) => ({ name: vscode.workspace.asRelativePath(vscode.Uri.parse(f.uri), false), hunks: r.outcome ? [] : this.hunks(r, i) })),
      outcome: r.outcome,
      reason: r.reason,
    };
  }

  /** The hunks of file i of review r, each accepted or pending. */
  hunks(r: Review, i: number): ReviewHunk[] {
    const f = r.files[i];
    return f ? hunksOf(f) : [];
  }

  /** The workspace/applyEdit middleware: edits that need confirmation are reviewed here, the others pass. */
  readonly handle: HandleApplyEdit = async (params, next) => {
    if (confirmations(params).length === 0) {
      return next(params, token());
    }
    let review: Review;
    try {
      review = await this.start(params);
    } catch (e) {
      return { applied: false, failureReason: `the edit could not be shown for review: ${e instanceof Error ? e.message : String(e)}` };
    }
    const text = `${params.label ?? "agent: edit"}: ${review.why}${review.place ? ` (${review.place})` : ""}`;
    const auto = this.bulk.decide(
      review.files.map((f) => vscode.Uri.parse(f.uri).path),
      review.protected,
    );
    let accepted: boolean;
    if (auto) {
      accepted = auto === "accept";
      this.note(`  ${accepted ? "✓ accepted" : "✗ rejected"} with ${accepted ? "Accept All" : "Reject All"}: ${text}`);
    } else {
      this.note(`  ⧗ waiting for your review: ${text}`);
      accepted = await this.show(review, params);
    }
    return this.answer(review, params, accepted, next);
  };

  /** Reads the edit's files and sets up the texts its diffs show. */
  private async start(params: ApplyWorkspaceEditParams): Promise<Review> {
    const files = await reviewFiles(params, (uri, create) => (create ? Promise.resolve("") : textOf(uri)));
    const id = ++this.next;
    // A side of file i's diff, holding text.
    const side = (scheme: string, f: ReviewFile, i: number, text: string) => {
      const u = vscode.Uri.from({ scheme, path: `/${id}/${i}/${vscode.workspace.asRelativePath(vscode.Uri.parse(f.uri), false)}` });
      this.texts.set(key(u), { text: new TextEncoder().encode(text), mtime: Date.now() });
      return u;
    };
    return {
      id,
      label: params.label ?? "agent: edit",
      why: why(params),
      place: queuePlace(params),
      protected: isProtected(params),
      files,
      originals: files.map((f, i) => side(originalScheme, f, i, f.original)),
      proposals: files.map((f, i) => side(proposalScheme, f, i, f.proposed)),
    };
  }

  /** Shows review and resolves once the user decided it: true accepted (what the proposal holds), false rejected. */
  private show(review: Review, params: ApplyWorkspaceEditParams): Promise<boolean> {
    return new Promise((decide) => {
      this.open.set(review.id, { review, params, decide });
      this.update();
      this.changed.fire(review);
      void this.reveal(review);
    });
  }

  /** Opens review's diffs, the first file's last so that it has the focus. */
  async reveal(review: Review): Promise<void> {
    for (let i = review.files.length - 1; i >= 0; i--) {
      const s = sides(review, i);
      if (!s) {
        continue;
      }
      const name = vscode.workspace.asRelativePath(vscode.Uri.parse(s.file.uri), false);
      const title = `${name}: agent's proposal${review.place ? ` (${review.place})` : ""}`;
      await vscode.commands.executeCommand("vscode.diff", s.original, s.proposal, title, { preview: false });
    }
  }

  /** Answers the server: the refusal, or the accepted text applied (next) unless a file changed during the review. */
  private async answer(review: Review, params: ApplyWorkspaceEditParams, accepted: boolean, next: Next): Promise<ApplyWorkspaceEditResult> {
    const d = decision(params, review.files, accepted);
    let result: ApplyWorkspaceEditResult;
    if ("refuse" in d) {
      result = d.refuse;
    } else {
      const r = (await this.changedDuring(review)) ?? (await next(d.apply, token()));
      result = "applied" in r ? r : { applied: false, failureReason: r.message };
    }
    const partly = review.files.some((f) => f.current !== f.proposed);
    review.outcome = !result.applied ? (accepted ? "not applied" : "rejected") : partly ? "accepted in part" : "accepted";
    review.reason = result.applied ? undefined : (result.failureReason ?? "VS Code did not apply it (the document changed?)");
    this.note(`  ${result.applied ? "✓" : "✗"} ${review.label}: ${review.outcome}${review.reason && review.outcome === "not applied" ? ` (${review.reason})` : ""}`);
    await this.close(review);
    return result;
  }

  /** The refusal when a file of review changed since the review showed it (the user typed in it meanwhile). */
  private async changedDuring(review: Review): Promise<ApplyWorkspaceEditResult | undefined> {
    for (const f of review.files) {
      if (!f.create && (await textOf(f.uri).catch(() => undefined)) !== f.original) {
        return { applied: false, failureReason: `${vscode.workspace.asRelativePath(vscode.Uri.parse(f.uri), false)} changed during the review` };
      }
    }
    return undefined;
  }

  /** Closes review's diffs (their proposals saved first, so that closing asks nothing) and forgets its texts. */
  private async close(review: Review): Promise<void> {
    this.open.delete(review.id);
    const sides = new Set([...review.originals, ...review.proposals].map((u) => u.toString()));
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.isDirty && sides.has(doc.uri.toString())) {
        await doc.save();
      }
    }
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputTextDiff && sides.has(t.input.modified.toString()));
    await vscode.window.tabGroups.close(tabs, true).then(undefined, () => false);
    for (const u of [...review.originals, ...review.proposals]) {
      this.texts.delete(key(u));
    }
    this.update();
    this.changed.fire(review);
  }

  /** Follows the user's typing in a proposal. */
  private edited(doc: vscode.TextDocument): void {
    if (doc.uri.scheme !== proposalScheme) {
      return;
    }
    for (const { review } of this.open.values()) {
      const f = review.files[review.proposals.findIndex((u) => u.toString() === doc.uri.toString())];
      if (f && f.current !== doc.getText()) {
        f.current = doc.getText();
        this.changed.fire(review);
      }
    }
  }

  /** Accepts the hunk key of file i of review r; the review is answered once no hunk is left undecided. */
  acceptHunk(r: Review, i: number, key: string): void {
    r.files[i]?.accepted.add(key);
    this.changed.fire(r);
    this.settle(r);
  }

  /** Rejects the hunk key of file i of review r: the file's lines go back into the proposal. */
  async rejectHunk(r: Review, i: number, key: string): Promise<void> {
    const s = sides(r, i);
    const h = s && hunksOf(s.file).find((x) => x.key === key);
    if (!s || !h) {
      return;
    }
    const doc = await vscode.workspace.openTextDocument(s.proposal);
    const e = revertEdit(splitLines(doc.getText()), h);
    const we = new vscode.WorkspaceEdit();
    we.replace(s.proposal, range(e), e.newText);
    if (!(await vscode.workspace.applyEdit(we))) {
      throw new Error("the proposal could not be changed");
    }
    s.file.current = doc.getText();
    this.changed.fire(r);
    this.settle(r);
  }

  /** Answers r as accepted once none of its hunks waits for a decision. */
  private settle(r: Review): void {
    if (pending(r.files) === 0) {
      this.decide(r, true);
    }
  }

  /** Decides the whole of review r: accepted as its proposals are now, or rejected. */
  decide(r: Review, accepted: boolean): void {
    const o = this.open.get(r.id);
    if (!o) {
      return;
    }
    r.files.forEach((f, i) => {
      const proposal = r.proposals[i]?.toString();
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === proposal);
      f.current = doc ? doc.getText() : f.current;
    });
    this.open.delete(r.id);
    o.decide(accepted);
  }

  /**
   * Accept All / Reject All: decides the reviews open now and the edits the
   * agent's current step still sends. An accept leaves a protected file's
   * edit open: it keeps its own confirmation.
   */
  all(d: BulkDecision): { decided: number; kept: Review[]; armed: number } {
    const armed = this.bulk.arm(d);
    const kept: Review[] = [];
    let decided = 0;
    for (const { review } of [...this.open.values()]) {
      if (d === "accept" && review.protected) {
        kept.push(review);
      } else {
        this.decide(review, d === "accept");
        decided++;
      }
    }
    return { decided, kept, armed };
  }

  /** The review, file and hunk at the cursor of editor (either side of a diff), if any. */
  at(editor: vscode.TextEditor | undefined): { review: Review; file: number; hunk?: ReviewHunk | undefined } | undefined {
    if (!editor) {
      return undefined;
    }
    const uri = editor.document.uri.toString();
    const line = editor.selection.active.line;
    for (const { review } of this.open.values()) {
      for (let i = 0; i < review.files.length; i++) {
        const left = review.originals[i]?.toString() === uri;
        if (!left && review.proposals[i]?.toString() !== uri) {
          continue;
        }
        const hunk = this.hunks(review, i).find((h) => {
          const [s, n] = left ? [h.from, h.to - h.from] : [h.at, h.lines.length];
          return n > 0 ? s <= line && line < s + n : line === s || line === s - 1;
        });
        return { review, file: i, hunk };
      }
    }
    return undefined;
  }

  /** The CodeLens of a proposal: the edit's actions at the top, Accept and Reject over each hunk. */
  private lenses(uri: vscode.Uri): vscode.CodeLens[] {
    const out: vscode.CodeLens[] = [];
    for (const { review } of this.open.values()) {
      const i = review.proposals.findIndex((u) => u.toString() === uri.toString());
      if (i < 0) {
        continue;
      }
      const top = new vscode.Range(0, 0, 0, 0);
      const lens = (r: vscode.Range, title: string, command: CommandId | "", args: unknown[] = [], tooltip?: string) => out.push(new vscode.CodeLens(r, { title, command, arguments: args, ...(tooltip !== undefined && { tooltip }) }));
      lens(top, "$(check-all) Accept Edit", "agentLsp.acceptEdit", [review.id], "Accept the whole edit as the proposal shows it (Ctrl+Alt+Shift+Y)");
      lens(top, "$(close-all) Reject Edit", "agentLsp.rejectEdit", [review.id], "Reject the whole edit (Ctrl+Alt+Shift+N)");
      for (const h of this.hunks(review, i)) {
        const line = Math.max(0, h.lines.length ? h.at : h.at - 1);
        const r = new vscode.Range(line, 0, line, 0);
        if (h.accepted) {
          lens(r, "$(check) Accepted", "");
        } else {
          lens(r, "$(check) Accept", "agentLsp.acceptChange", [review.id, i, h.key], "Keep this change (Ctrl+Alt+Y)");
        }
        lens(r, "$(close) Reject", "agentLsp.rejectChange", [review.id, i, h.key], "Put the file's lines back (Ctrl+Alt+N)");
      }
    }
    return out;
  }

  /** The open review with id, or the latest one. */
  find(id?: number): Review | undefined {
    return id === undefined ? this.list().at(-1) : this.open.get(id)?.review;
  }

  /** Closes the reviews whose runs ended without them (a cancelled run): nobody waits for their answer. */
  private stale(): void {
    this.bulk.clear();
    for (const { review } of [...this.open.values()]) {
      this.decide(review, false);
    }
  }

  /** The status bar items and the context key of the review commands. */
  private update(): void {
    const latest = this.list().at(-1);
    void vscode.commands.executeCommand("setContext", "agentLsp.reviewing", latest !== undefined);
    if (!latest) {
      this.status.forEach((s) => s.hide());
      return;
    }
    const names = latest.files.map((f) => vscode.workspace.asRelativePath(vscode.Uri.parse(f.uri), false)).join(", ");
    this.status[0].text = `$(git-compare) Review ${names}${latest.place ? ` (${latest.place})` : ""}`;
    this.status[0].tooltip = `${latest.label}: ${latest.why}. Click to show the diff.`;
    this.status.forEach((s) => s.show());
  }

  dispose(): void {
    this.stale();
    this.subs.forEach((d) => {
      d.dispose();
    });
  }
}

/** A side's key in the texts: its scheme and path. */
function key(u: vscode.Uri): string {
  return `${u.scheme}:${u.path}`;
}

/** The text of the file at uri: its open document's, else the disk's. */
async function textOf(uri: string): Promise<string> {
  const u = vscode.Uri.parse(uri);
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === u.toString());
  return doc ? doc.getText() : new TextDecoder().decode(await vscode.workspace.fs.readFile(u));
}

function range(e: LspTextEdit): vscode.Range {
  return new vscode.Range(e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character);
}

/** The client calls the middleware without a token and its next ignores one; the type wants one. */
function token(): vscode.CancellationToken {
  return new vscode.CancellationTokenSource().token;
}
