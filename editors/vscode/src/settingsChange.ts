// How a change of the agentLsp.* settings reaches the server (config.ts,
// settingEffect). Most go to the running server as
// workspace/didChangeConfiguration and apply to the runs that start from then
// on, never to a running one. The binary (agentLsp.path) and the store file
// are read when the server starts, so their change restarts it: at once when
// no run of this window is going, else once they have all ended. A settings
// change never stops a running run.
import * as vscode from "vscode";
import { configureSettings, restartSettings } from "./config";
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
    const note = vscode.window.setStatusBarMessage("$(clock) agent: the server restarts with the new binary or store when the running agent ends");
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
  const affects = (e: vscode.ConfigurationChangeEvent, keys: readonly string[]) => keys.some((key) => e.affectsConfiguration(`agentLsp.${key}`));
  ctx.pushCleanup(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("agentLsp.edits")) {
        const review = ctx.settings().edits === "review";
        vscode.window.setStatusBarMessage(review ? "agent: edits now open for your review first" : "agent: edits now apply directly", 8000);
      }
      if (affects(e, restartSettings)) {
        restartWhenIdle(); // the new server reads every setting
      } else if (affects(e, configureSettings)) {
        void ctx.client.configure();
      }
      if (e.affectsConfiguration("agentLsp.model")) {
        ctx.models.refresh();
      }
    }),
    new vscode.Disposable(() => {
      waiting?.dispose();
    }),
  );
}
