// The extension's commands, each a factory over the context that returns its
// handler (as rust-analyzer's commands.ts), and the one table that registers
// them. A factory may also register what serves its command (a code action, a
// document provider) with ctx.pushCleanup.
import * as vscode from "vscode";
import type { Cmd, Ctx } from "./ctx";
import { deleted, errorText, projectItem, projectsReport, sessionItem, switched, transcript } from "./format";
import { cancelRun, launch, runPrompt } from "./launch";
import { requests, type RunArgs, type RunResult, type SessionInfo } from "./protocol";
import { markdownDocuments } from "./markdownDocs";

/** The commands by id; package.json contributes exactly these. */
export const commands = {
  "agentLsp.run": run,
  "agentLsp.resume": resume,
  "agentLsp.showSession": showSession,
  "agentLsp.cancel": cancel,
  "agentLsp.switchProject": switchProject,
  "agentLsp.showProjects": showProjects,
  "agentLsp.deleteSession": deleteSession,
  "agentLsp.setApiKey": setApiKey,
  "agentLsp.showOutput": showOutput,
  "agentLsp.restart": restart,
  "agentLsp.askAboutSelection": askAboutSelection,
} satisfies Record<string, (ctx: Ctx) => Cmd>;

export type CommandId = keyof typeof commands;

/** Registers every command until ctx is disposed; a failure shows as an error message. */
export function registerCommands(ctx: Ctx): void {
  for (const [id, factory] of Object.entries(commands)) {
    const handler = factory(ctx);
    ctx.pushCleanup(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await handler(...args);
        } catch (e) {
          void vscode.window.showErrorMessage(`agent-lsp: ${errorText(e)}`);
        }
      }),
    );
  }
}

/** Agent: Run; a non-empty selection goes along. */
export function run(ctx: Ctx): Cmd {
  return async () => {
    const editor = vscode.window.activeTextEditor;
    const about = editor && !editor.selection.isEmpty ? { uri: editor.document.uri, range: editor.selection } : undefined;
    return promptAndRun(ctx, about, {
      title: "Agent: Run",
      prompt: `What should the agent do${about ? ` about ${where(about.uri, about.range)}` : ""}?`,
      placeHolder: "e.g. Add a unit test for this function",
    });
  };
}

/** Ask Agent About This Selection, and the code action that offers it on a selection. */
export function askAboutSelection(ctx: Ctx): Cmd {
  const title = "Ask agent about this selection";
  const kind = vscode.CodeActionKind.Refactor.append("agent");
  ctx.pushCleanup(
    vscode.languages.registerCodeActionsProvider(
      [{ scheme: "file" }, { scheme: "untitled" }],
      {
        provideCodeActions(doc, range) {
          if (range.isEmpty) {
            return [];
          }
          const action = new vscode.CodeAction(title, kind);
          action.command = { command: "agentLsp.askAboutSelection" satisfies CommandId, title, arguments: [doc.uri, range] };
          return [action];
        },
      },
      { providedCodeActionKinds: [kind] },
    ),
  );
  return async (uri?: vscode.Uri, range?: vscode.Range) => {
    const editor = vscode.window.activeTextEditor;
    uri ??= editor?.document.uri;
    range ??= editor?.selection;
    if (!uri || !range) {
      void vscode.window.showInformationMessage("Select some code first, then ask the agent about it.");
      return undefined;
    }
    return promptAndRun(ctx, { uri, range }, { title, prompt: where(uri, range), placeHolder: "e.g. Why can this return nil?" });
  };
}

export function resume(ctx: Ctx): Cmd {
  return async (session?: string) => {
    session ??= await pickSession(ctx, "Resume which session?", (s) => s.status !== "done");
    return session ? launch(ctx, requests.resume, { session }, `resume ${session}`) : undefined;
  };
}

/** Agent: Show Session: the transcript as a read-only Markdown document. */
export function showSession(ctx: Ctx): Cmd {
  const open = markdownDocuments(ctx, "agent-session", async (session) => transcript(await ctx.server().send(requests.session, { session })));
  return async (session?: string) => {
    session ??= await pickSession(ctx, "Show which session?");
    if (session) {
      await open(session);
    }
  };
}

export function cancel(ctx: Ctx): Cmd {
  return async () => {
    const runs = ctx.runs.list();
    if (runs.length === 0) {
      void vscode.window.showInformationMessage("No agent run is going in this window.");
      return;
    }
    const chosen =
      runs.length === 1
        ? runs[0]
        : (await vscode.window.showQuickPick(runs.map((r) => ({ label: r.title, description: r.message ?? "", run: r })), { title: "Cancel which run?" }))?.run;
    if (chosen) {
      await cancelRun(ctx, chosen);
    }
  };
}

/** Agent: Switch Project: moves the last session, or else the next run, to another project. */
export function switchProject(ctx: Ctx): Cmd {
  return async () => {
    const projects = await ctx.server().send(requests.projects, {});
    const pick = await vscode.window.showQuickPick(
      projects.map((p) => ({ ...projectItem(p), name: p.name })),
      { title: ctx.lastSession ? `Switch session ${ctx.lastSession} to project` : "Run the next session in project" },
    );
    if (!pick) {
      return;
    }
    ctx.chosenProject = pick.name;
    if (ctx.lastSession) {
      const r = await ctx.server().send(requests.switchProject, { session: ctx.lastSession, project: pick.name });
      void vscode.window.showInformationMessage(switched(r));
    } else {
      void vscode.window.showInformationMessage(`The next agent run uses project ${pick.name}.`);
    }
  };
}

/** Agent: Show Projects: each project's stack and full sandbox report, as a read-only Markdown document. */
export function showProjects(ctx: Ctx): Cmd {
  const open = markdownDocuments(ctx, "agent-projects", async () => projectsReport(await ctx.server().send(requests.projects, {})));
  return () => open("projects");
}

export function deleteSession(ctx: Ctx): Cmd {
  return async () => {
    const session = await pickSession(ctx, "Delete which session?", (s) => s.status !== "running");
    if (!session) {
      return;
    }
    const ok = await vscode.window.showWarningMessage(`Delete session ${session}? Its transcript and checkpoints are removed.`, { modal: true }, "Delete");
    if (ok !== "Delete") {
      return;
    }
    const r = await ctx.server().send(requests.deleteSession, { session });
    if (ctx.lastSession === session) {
      ctx.lastSession = undefined;
    }
    void vscode.window.showInformationMessage(deleted(session, r));
  };
}

/** Agent: Set API Key: the key goes to secret storage only, never to settings or the output. */
export function setApiKey(ctx: Ctx): Cmd {
  return async () => {
    const key = await vscode.window.showInputBox({
      title: "Agent: Set API Key",
      prompt: "API key for the model endpoint; kept in VS Code's secret storage. Leave empty to remove it.",
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) {
      return;
    }
    await ctx.client.setApiKey(key.trim());
    void vscode.window.showInformationMessage(key.trim() ? "API key saved; the agent server restarted with it." : "API key removed.");
  };
}

export function showOutput(ctx: Ctx): Cmd {
  return () => ctx.output.show(true);
}

export function restart(ctx: Ctx): Cmd {
  return () => ctx.client.restart();
}

/** Asks for a prompt and runs it, about a selection when given. */
async function promptAndRun(
  ctx: Ctx,
  about: { uri: vscode.Uri; range: vscode.Range } | undefined,
  box: vscode.InputBoxOptions,
): Promise<RunResult | undefined> {
  const prompt = await vscode.window.showInputBox({ ...box, ignoreFocusOut: true });
  if (!prompt?.trim()) {
    return undefined;
  }
  return runPrompt(ctx, { prompt: prompt.trim(), ...(about && { uri: about.uri.toString(), range: toRange(about.range) }) }, prompt);
}

/** Asks the user for one of the server's sessions that pass filter. */
async function pickSession(ctx: Ctx, title: string, filter?: (s: SessionInfo) => boolean): Promise<string | undefined> {
  const all = await ctx.server().send(requests.sessions, {});
  const list = filter ? all.filter(filter) : all;
  if (list.length === 0) {
    void vscode.window.showInformationMessage(all.length === 0 ? "No agent sessions yet." : "No session to choose from.");
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    list.map((s) => ({ ...sessionItem(s), session: s.session })),
    { title, matchOnDescription: true, matchOnDetail: true },
  );
  return pick?.session;
}

function where(uri: vscode.Uri, range: vscode.Range): string {
  return `${vscode.workspace.asRelativePath(uri)} lines ${range.start.line + 1}-${range.end.line + 1}`;
}

function toRange(r: vscode.Range): NonNullable<RunArgs["range"]> {
  return { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } };
}
