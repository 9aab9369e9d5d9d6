// Starting and cancelling runs: a new run goes to the project the user works
// in; agent.run and agent.resume go out with the edit mode and a work-done
// token, show as a cancellable progress notification and in the status bar,
// and end with a summary that offers the next step.
import * as vscode from "vscode";
import type { CommandId } from "./commands";
import type { Ctx } from "./ctx";
import { summary } from "./format";
import { requests, type EditMode, type Request, type RunArgs, type RunResult } from "./protocol";
import type { Run } from "./runs";

/** Runs agent.run in the project picked with Switch Project, else in the project of the file the run is about. */
export async function runPrompt(ctx: Ctx, args: RunArgs, prompt: string): Promise<RunResult | undefined> {
  const project = ctx.chosenProject ?? (await projectOf(ctx, args.uri ? vscode.Uri.parse(args.uri) : vscode.window.activeTextEditor?.document.uri));
  return launch(ctx, requests.run, { ...args, project }, prompt);
}

/**
 * Sends req (agent.run or agent.resume) and follows it until it ends; prompt
 * titles the run. Undefined when the run was cancelled before its session was known.
 */
export async function launch<A extends { session?: string; edits?: EditMode }>(
  ctx: Ctx,
  req: Request<A, RunResult>,
  args: NoInfer<A>,
  prompt: string,
): Promise<RunResult | undefined> {
  const server = ctx.server();
  const full = { ...args, edits: ctx.settings().edits };
  const run = ctx.runs.begin(`agent: ${firstWords(prompt, 6)}`, args.session);
  ctx.output.appendLine(`▶ ${prompt}`);
  try {
    return await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: run.title, cancellable: true },
      async (progress, cancelled) => {
        const sub = server.onProgress(run.token, (v) => {
          if (v.kind === "report" && v.message) {
            progress.report({ message: v.message });
            ctx.runs.progress(run, v.message);
          }
        });
        const onCancel = cancelled.onCancellationRequested(() => void cancelRun(ctx, run));
        try {
          const result = await server.send(req, full, { token: run.source.token, workDoneToken: run.token });
          ctx.lastSession = result.session;
          void report(result);
          return result;
        } catch (e) {
          if (isCancelled(e)) {
            void vscode.window.showInformationMessage("Agent cancelled.");
            return undefined;
          }
          throw e;
        } finally {
          sub.dispose();
          onCancel.dispose();
        }
      },
    );
  } finally {
    ctx.runs.end(run);
  }
}

/** Cancels run: with agent.cancel once its session is known, else by cancelling the request. */
export async function cancelRun(ctx: Ctx, run: Run): Promise<void> {
  if (run.session) {
    await ctx.server().send(requests.cancel, { session: run.session });
  } else {
    run.source.cancel(); // sends $/cancelRequest
  }
}

/** The innermost project holding uri in a multi-root window, so a run goes where the user is. */
async function projectOf(ctx: Ctx, uri: vscode.Uri | undefined): Promise<string | undefined> {
  if (!uri || uri.scheme !== "file" || (vscode.workspace.workspaceFolders?.length ?? 0) < 2) {
    return undefined;
  }
  let best: { name: string; path: string } | undefined;
  for (const p of await ctx.server().send(requests.projects, {})) {
    const inside = uri.fsPath === p.path || uri.fsPath.startsWith(p.path.endsWith("/") ? p.path : p.path + "/");
    if (inside && (!best || p.path.length > best.path.length)) {
      best = p;
    }
  }
  return best?.name;
}

/** Shows the summary; the user may open the session, or resume it when it did not finish. */
async function report(r: RunResult): Promise<void> {
  const text = summary(r);
  const show = "Show Session";
  const pick =
    r.status === "done" || r.status === "cancelled"
      ? await vscode.window.showInformationMessage(text, show)
      : await vscode.window.showWarningMessage(text, show, "Resume");
  if (pick === show) {
    await vscode.commands.executeCommand("agentLsp.showSession" satisfies CommandId, r.session);
  } else if (pick === "Resume") {
    await vscode.commands.executeCommand("agentLsp.resume" satisfies CommandId, r.session);
  }
}

function firstWords(s: string, n: number): string {
  const w = s.trim().split(/\s+/);
  return w.length > n ? w.slice(0, n).join(" ") + "…" : w.join(" ");
}

/** True for the error of a request cancelled with $/cancelRequest (RequestCancelled). */
function isCancelled(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { code?: number }).code === -32800;
}
