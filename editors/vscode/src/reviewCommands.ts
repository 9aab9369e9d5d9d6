// The review's commands (review.ts): Accept Change and Reject Change for the
// hunk their CodeLens or chat button names, or the one at the cursor (keys);
// Accept Edit and Reject Edit for a whole edit; Accept All and Reject All;
// Show Review to open the diff again. Factories over the context, as
// commands.ts registers them.
import * as vscode from "vscode";
import type { Cmd, Ctx } from "./ctx";
import type { Review } from "./review";

/** The review and hunk a change command is about: the ones named (CodeLens, chat), else the cursor's. */
function change(ctx: Ctx, id?: number, file?: number, key?: string): { review: Review; file: number; key: string } | undefined {
  if (id !== undefined && file !== undefined && key !== undefined) {
    const review = ctx.reviews.find(id);
    return review && { review, file, key };
  }
  const at = ctx.reviews.at(vscode.window.activeTextEditor);
  if (at?.hunk) {
    return { review: at.review, file: at.file, key: at.hunk.key };
  }
  void vscode.window.showInformationMessage("Put the cursor in a change of the agent's proposal (the diff of an edit under review).");
  return undefined;
}

/** The review an edit command is about: the one named, else the active diff's, else the latest. */
function edit(ctx: Ctx, id?: number): Review | undefined {
  const review = id !== undefined ? ctx.reviews.find(id) : (ctx.reviews.at(vscode.window.activeTextEditor)?.review ?? ctx.reviews.find());
  if (!review) {
    void vscode.window.showInformationMessage("No agent edit waits for review.");
  }
  return review;
}

/** Agent: Accept Change: keeps a hunk of the proposal. */
export function acceptChange(ctx: Ctx): Cmd {
  return (id?: number, file?: number, key?: string) => {
    const c = change(ctx, id, file, key);
    if (c) {
      ctx.reviews.acceptHunk(c.review, c.file, c.key);
    }
  };
}

/** Agent: Reject Change: puts the file's lines of a hunk back in the proposal. */
export function rejectChange(ctx: Ctx): Cmd {
  return (id?: number, file?: number, key?: string) => {
    const c = change(ctx, id, file, key);
    return c ? ctx.reviews.rejectHunk(c.review, c.file, c.key) : undefined;
  };
}

/** Agent: Accept Edit: the whole edit, as its proposal is now. */
export function acceptEdit(ctx: Ctx): Cmd {
  return (id?: number) => {
    const r = edit(ctx, id);
    if (r) {
      ctx.reviews.decide(r, true);
    }
  };
}

/** Agent: Reject Edit: the whole edit. */
export function rejectEdit(ctx: Ctx): Cmd {
  return (id?: number) => {
    const r = edit(ctx, id);
    if (r) {
      ctx.reviews.decide(r, false);
    }
  };
}

/** Agent: Accept All Edits: the edits under review and those the agent's current step still sends, except a protected file's. */
export function acceptAll(ctx: Ctx): Cmd {
  return () => {
    const { kept } = ctx.reviews.all("accept");
    if (kept.length) {
      const names = kept.map((r) => r.label).join(", ");
      void vscode.window.showInformationMessage(`Accept All leaves edits of protected files to you: ${names}. Accept or reject each on its own.`);
    }
  };
}

/** Agent: Reject All Edits: the edits under review and those the agent's current step still sends. */
export function rejectAll(ctx: Ctx): Cmd {
  return () => void ctx.reviews.all("reject");
}

/** Agent: Show Review: opens the diff of an edit under review again. */
export function showReview(ctx: Ctx): Cmd {
  return (id?: number) => {
    const r = edit(ctx, id);
    return r && ctx.reviews.reveal(r);
  };
}
