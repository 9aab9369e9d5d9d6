// How a change of the agentLsp.* settings reaches the server. The edit mode
// goes with every run, so its change applies to the next run as it is. The
// other settings are read when the server starts, so their change restarts it:
// at once when no run of this window is going, else once they have all ended.
// A settings change never stops a running run.
import * as vscode from "vscode";
import { serverSettings } from "./config";
import type { Ctx } from "./ctx";

/** Follows settings changes until ctx is disposed. */
export function watchSettings(ctx: Ctx): void {
  let waiting: vscode.Disposable | undefined;
  const restartWhenIdle = () => {
    if (!ctx.runs.busy()) {
      void ctx.client.restart();
      return;
    }
    if (waiting) {
      return;
    }
    const note = vscode.window.setStatusBarMessage("$(clock) agent: settings changed; the server restarts with them when the running agent ends");
    const idle = ctx.runs.onIdle(() => {
      waiting?.dispose();
      void ctx.client.restart();
    });
    waiting = new vscode.Disposable(() => {
      note.dispose();
      idle.dispose();
      waiting = undefined;
    });
  };
  ctx.pushCleanup(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("agentLsp.edits")) {
        const review = ctx.settings().edits === "review";
        vscode.window.setStatusBarMessage(review ? "agent: edits now open in the refactor preview first" : "agent: edits now apply directly", 8000);
      }
      if (serverSettings.some((key) => e.affectsConfiguration(`agentLsp.${key}`))) {
        restartWhenIdle();
      }
    }),
    new vscode.Disposable(() => waiting?.dispose()),
  );
}
