// Edits that need the user's confirmation (review mode, a protected file)
// open in VS Code's refactor preview. The preview groups them by file, which
// hides the server's description of each: why it needs confirmation and,
// while other edits wait behind it, its place in the queue ("(1 of 3)"). So
// while such an edit waits for the user, the status bar shows its label and
// description, and the Agent output notes it.
import * as vscode from "vscode";
import type { ApplyWorkspaceEditParams, WorkspaceMiddleware } from "vscode-languageclient";

type HandleApplyEdit = NonNullable<WorkspaceMiddleware["handleApplyEdit"]>;

/** The workspace/applyEdit middleware that shows an edit waiting for confirmation; note gets its transcript line. */
export function showReviews(note: (line: string) => void): HandleApplyEdit {
  // The client calls the middleware without a token and its next ignores one; the type wants one.
  const token = new vscode.CancellationTokenSource().token;
  return async (params, next) => {
    const why = confirmation(params);
    if (!why) {
      return next(params, token);
    }
    const text = `${params.label ?? "agent: edit"}: ${why}`;
    note(`  ⧗ in the Refactor Preview: ${text}`);
    const shown = vscode.window.setStatusBarMessage(`$(eye) ${text}`);
    try {
      return await next(params, token);
    } finally {
      shown.dispose();
    }
  };
}

/** The descriptions of the edit's change annotations that need confirmation, "" when none does. */
export function confirmation(params: ApplyWorkspaceEditParams): string {
  const asks = Object.values(params.edit.changeAnnotations ?? {}).filter((a) => a.needsConfirmation);
  return asks.map((a) => a.description ?? a.label).join("; ");
}
