// Starting and cancelling runs: a new run goes to the project the user works
// in, a follow-up to its session (queued when that session's run is going);
// agent.run and agent.resume go out with the edit mode and a work-done token,
// show in the status bar and in the chat (runs.ts's onBegin), and end with at
// most one notification: none when the chat shows the run's session, else a
// plain-text summary that offers the next step, and offers back the queued
// prompts a run ended without reading.
import * as vscode from "vscode";
import type { CommandId } from "./commands";
import type { Ctx } from "./ctx";
import { summary, unread } from "./format";
import { requests, type EditMode, type Mode, type FinishedRun, type Request, type RunArgs, type RunResult } from "./protocol";
import { offerFix, reasonOf, reasonText, ShownError } from "./reasons";
import type { Run, RunOpts } from "./runs";

/** How a run is launched: its title (the prompt, or "resume <session>"), what the chat shows of it, and who wants it as it begins. */
export interface LaunchOpts extends Omit<RunOpts, "session"> {
  title: string;
  /** Gets the run as it begins (its session is bound at its run.start event). */
  onBegin?: (run: Run) => void;
}

/** Runs agent.run in the project picked with Switch Project, else in the project of the file the run is about. */
export async function runPrompt(ctx: Ctx, args: RunArgs, opts: LaunchOpts): Promise<RunResult | undefined> {
  const project = ctx.chosenProject ?? (await projectOf(ctx, args.uri ? vscode.Uri.parse(args.uri) : vscode.window.activeTextEditor?.document.uri));
  return launch(ctx, requests.run, { ...args, project }, opts);
}

/**
 * Runs agent.run in session, in the session's own project. When that session's
 * run is going, the server queues the prompt for its next step and answers at
 * once: the queued line comes with the message.queued event, the running run's
 * result covers the prompt, and no second run starts.
 */
export async function followUpRun(ctx: Ctx, session: string, args: RunArgs, opts: LaunchOpts): Promise<RunResult | undefined> {
  return launch(ctx, requests.run, { ...args, session }, opts);
}

/**
 * Sends req (agent.run or agent.resume) and follows it until it ends.
 * Undefined when the run was cancelled before its session was known.
 */
export async function launch<A extends { session?: string; edits?: EditMode; model?: string; mode?: Mode }>(ctx: Ctx, req: Request<A, RunResult>, args: NoInfer<A>, opts: LaunchOpts): Promise<RunResult | undefined> {
  const server = await ctx.ready();
  const model = ctx.models.get();
  // The workspace's model (Agent: Select Model) goes with every run; unset, the session's or the settings' applies.
  // So does its mode (Agent: Select Mode), unless the caller names one.
  // The budget settings go with every run too, as they are when it starts (the server's copy of the
  // settings follows a change a moment later).
  const settings = ctx.settings();
  const maxTokens = settings["limits.maxTokens"];
  const maxCost = settings["limits.maxCost"];
  const budget = { ...(maxTokens !== null && { maxTokens }), ...(maxCost !== null && { maxCost }) };
  const full = { mode: ctx.mode.get(), ...budget, ...args, edits: settings.edits, ...(model && { model }) };
  const { title, onBegin, ...shown } = opts;
  const run = ctx.runs.begin(`agent: ${firstWords(title, 6)}`, { ...shown, session: args.session });
  onBegin?.(run);
  ctx.output.appendLine(`▶ ${title}`);
  const sub = server.onProgress(run.token, (v) => {
    if (v.kind === "report" && v.message) {
      ctx.runs.progress(run, v.message);
    }
  });
  let result: RunResult | undefined;
  try {
    result = await server.send(req, full, { token: run.source.token, workDoneToken: run.token });
    ctx.lastSession = result.session;
    const inChat = ctx.runs.chatShows(result.session);
    if (result.status === "queued") {
      // Not a run of its own: the running run reads it, and its own summary covers it.
      if (!inChat) {
        void vscode.window.showInformationMessage(summary(result));
      }
      return result;
    }
    ctx.output.append(unread(result)); // never lost: the output keeps them, the chat or the summary offers them back
    if (!inChat) {
      void report(result);
    }
    return result;
  } catch (e) {
    if (isCancelled(e)) {
      if (!(run.session && ctx.runs.chatShows(run.session))) {
        void vscode.window.showInformationMessage("Agent cancelled.");
      }
      return undefined;
    }
    const why = reasonOf(e);
    if (why) {
      // The action that fixes it (Set API Key, ...), never Resume: nothing ran.
      void offerFix(reasonText(why), why.reason);
      throw new ShownError(reasonText(why), why.reason);
    }
    throw e;
  } finally {
    sub.dispose();
    ctx.runs.end(run, result);
  }
}

/** Cancels run: with agent.cancel once its session is known, else by cancelling the request. */
export async function cancelRun(ctx: Ctx, run: Run): Promise<void> {
  if (run.session) {
    await (await ctx.ready()).send(requests.cancel, { session: run.session });
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
  for (const p of await (await ctx.ready()).send(requests.projects, {})) {
    const inside = uri.fsPath === p.path || uri.fsPath.startsWith(p.path.endsWith("/") ? p.path : p.path + "/");
    if (inside && (!best || p.path.length > best.path.length)) {
      best = p;
    }
  }
  return best?.name;
}

/** The buttons a run's summary may offer, by label: what each does with the run. */
const actions = {
  "Open in Chat": (r) => vscode.commands.executeCommand("agentLsp.showChat" satisfies CommandId, r.session),
  "Follow Up": (r) => vscode.commands.executeCommand("agentLsp.followUp" satisfies CommandId, r.session),
  Resume: (r) => vscode.commands.executeCommand("agentLsp.resume" satisfies CommandId, r.session),
  // The queued prompts the run never read, in order, as one prompt to its session.
  "Send Again": (r) => vscode.commands.executeCommand("agentLsp.followUp" satisfies CommandId, r.session, (r.queued ?? []).join("\n\n")),
} satisfies Record<string, (r: FinishedRun) => Thenable<unknown>>;

type Action = keyof typeof actions;

/**
 * How a run's summary shows, by its status: the notification's level and its
 * buttons. A failed run is an error whose text says what failed and what to
 * do (the server's sentence); Resume continues it once that is fixed.
 */
const reports: Record<FinishedRun["status"], { level: "info" | "warning" | "error"; buttons: Action[] }> = {
  done: { level: "info", buttons: ["Open in Chat", "Follow Up"] },
  cancelled: { level: "info", buttons: ["Open in Chat", "Follow Up"] },
  limit: { level: "warning", buttons: ["Resume", "Open in Chat"] },
  failed: { level: "error", buttons: ["Resume", "Open in Chat"] },
};

const show = {
  info: vscode.window.showInformationMessage,
  warning: vscode.window.showWarningMessage,
  error: vscode.window.showErrorMessage,
};

/** Shows the summary (plain text) with the next steps (reports); Send Again first when the run left queued prompts unread. */
async function report(r: FinishedRun): Promise<void> {
  if (r.status === "failed" && r.reason) {
    return offerFix(summary(r), r.reason); // a setting fixes it: its action, not Resume
  }
  const how = r.queued?.length ? { level: "warning" as const, buttons: ["Send Again", "Open in Chat"] as Action[] } : reports[r.status];
  const pick = await show[how.level](summary(r), ...how.buttons);
  if (pick) {
    await actions[pick](r);
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
