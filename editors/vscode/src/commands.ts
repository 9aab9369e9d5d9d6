// The extension's commands, each a factory over the context that returns its
// handler (as rust-analyzer's commands.ts), and the one table that registers
// them. A factory may also register what serves its command (a code action, a
// document provider) with ctx.pushCleanup.
import * as vscode from "vscode";
import { aboutReport } from "./about";
import type { Cmd, Ctx } from "./ctx";
import { deleted, errorText, mcpReport, modelItem, parseSessionDocPath, processItem, projectItem, projectsReport, sessionDocPath, sessionItem, sessionScheme, stoppedProcess, switched, transcript } from "./format";
import { cancelRun, followUpRun, launch, runPrompt } from "./launch";
import { markdownDocuments } from "./markdownDocs";
import { modeItems } from "./modes";
import { offerFix, reasonOf, reasonText, shown } from "./reasons";
import { requests, type RunArgs, type SessionInfo } from "./protocol";
import { acceptAll, acceptChange, acceptEdit, rejectAll, rejectChange, rejectEdit, showReview } from "./reviewCommands";

/** The commands by id; package.json contributes exactly these. */
export const commands = {
  "agentLsp.run": run,
  "agentLsp.followUp": followUp,
  "agentLsp.resume": resume,
  "agentLsp.showSession": showSession,
  "agentLsp.cancel": cancel,
  "agentLsp.switchProject": switchProject,
  "agentLsp.showProjects": showProjects,
  "agentLsp.showMcp": showMcp,
  "agentLsp.backgroundProcesses": backgroundProcesses,
  "agentLsp.deleteSession": deleteSession,
  "agentLsp.setApiKey": setApiKey,
  "agentLsp.showOutput": showOutput,
  "agentLsp.restart": restart,
  "agentLsp.askAboutSelection": askAboutSelection,
  "agentLsp.selectModel": selectModel,
  "agentLsp.selectMode": selectMode,
  "agentLsp.showChat": showChat,
  "agentLsp.about": about,
  "agentLsp.showReview": showReview,
  "agentLsp.acceptChange": acceptChange,
  "agentLsp.rejectChange": rejectChange,
  "agentLsp.acceptEdit": acceptEdit,
  "agentLsp.rejectEdit": rejectEdit,
  "agentLsp.acceptAll": acceptAll,
  "agentLsp.rejectAll": rejectAll,
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
          if (!shown(e)) {
            void vscode.window.showErrorMessage(`agent-lsp: ${errorText(e)}`);
          }
          return undefined;
        }
      }),
    );
  }
}

/** Agent: Run: a new session; a non-empty selection goes along. */
export function run(ctx: Ctx): Cmd {
  return async () => {
    const about = selection();
    const busy = ctx.runs.list().some((r) => r.session);
    const prompt = await vscode.window.showInputBox({
      title: "Agent: Run",
      prompt: `What should the agent do${about ? ` about ${where(about.uri, about.range)}` : ""}?${busy ? " (A new session; Agent: Follow Up adds to the running one.)" : ""}`,
      placeHolder: "e.g. Add a unit test for this function",
      ignoreFocusOut: true,
    });
    return prompt?.trim() ? runPrompt(ctx, promptArgs(prompt, about), { title: prompt, prompt: prompt.trim(), about: about && label(about) }) : undefined;
  };
}

/**
 * Agent: Follow Up: a prompt for the current session (the one running in this
 * window, else the last one), or for session when given. While that session's
 * run is going the prompt is queued for its next step; otherwise it continues
 * the session. With prompt (Send Again after a run left queued prompts unread)
 * it sends that without asking. A non-empty selection goes along.
 */
export function followUp(ctx: Ctx): Cmd {
  return async (session?: string, prompt?: string) => {
    session ??= await currentSession(ctx);
    if (!session) {
      return undefined;
    }
    const about = prompt === undefined ? selection() : undefined;
    if (prompt === undefined) {
      const running = ctx.runs.list().find((r) => r.session === session);
      prompt = await vscode.window.showInputBox({
        title: "Agent: Follow Up",
        prompt: running ? `Add to the running session ${session} (${running.title}): the agent reads it at its next step.` : `Continue session ${session}${about ? ` about ${where(about.uri, about.range)}` : ""}.`,
        placeHolder: "e.g. Also cover the error case",
        ignoreFocusOut: true,
      });
    }
    return prompt?.trim() ? followUpRun(ctx, session, promptArgs(prompt, about), { title: prompt, prompt: prompt.trim(), about: about && label(about) }) : undefined;
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
    const prompt = await vscode.window.showInputBox({ title, prompt: where(uri, range), placeHolder: "e.g. Why can this return nil?", ignoreFocusOut: true });
    return prompt?.trim() ? runPrompt(ctx, promptArgs(prompt, { uri, range }), { title: prompt, prompt: prompt.trim(), about: label({ uri, range }) }) : undefined;
  };
}

export function resume(ctx: Ctx): Cmd {
  return async (session?: string) => {
    session ??= await pickSession(ctx, "Resume which session?", (s) => s.status !== "done" && s.status !== "running");
    return session ? launch(ctx, requests.resume, { session }, { title: `resume ${session}` }) : undefined;
  };
}

/** Agent: Show Session: the transcript as a read-only Markdown document; with context, one subagent's of the session. */
export function showSession(ctx: Ctx): Cmd {
  const open = markdownDocuments(ctx, sessionScheme, {
    render: async (path) => {
      const { session, context } = parseSessionDocPath(path);
      return transcript(await (await ctx.ready()).send(requests.session, { session, ...(context && { context }) }));
    },
    title: (path) => {
      const { session, context } = parseSessionDocPath(path);
      return context ? `Subagent ${context} of session ${session}` : `Session ${session}`;
    },
  });
  return async (session?: string, context?: string) => {
    session ??= await pickSession(ctx, "Show which session?");
    if (session) {
      await open(sessionDocPath(session, context));
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
        : (
            await vscode.window.showQuickPick(
              runs.map((r) => ({ label: r.title, description: r.message ?? "", run: r })),
              { title: "Cancel which run?" },
            )
          )?.run;
    if (chosen) {
      await cancelRun(ctx, chosen);
    }
  };
}

/** Agent: Switch Project: moves the last session, or else the next run, to another project. */
export function switchProject(ctx: Ctx): Cmd {
  return async () => {
    const projects = await (await ctx.ready()).send(requests.projects, {});
    const pick = await vscode.window.showQuickPick(
      projects.map((p) => ({ ...projectItem(p), name: p.name })),
      { title: ctx.lastSession ? `Switch session ${ctx.lastSession} to project` : "Run the next session in project" },
    );
    if (!pick) {
      return;
    }
    ctx.chosenProject = pick.name;
    if (ctx.lastSession) {
      const r = await (await ctx.ready()).send(requests.switchProject, { session: ctx.lastSession, project: pick.name });
      void vscode.window.showInformationMessage(switched(r));
    } else {
      void vscode.window.showInformationMessage(`The next agent run uses project ${pick.name}.`);
    }
  };
}

/** Agent: Show Projects: each project's stack and full sandbox report, as a read-only Markdown document. */
export function showProjects(ctx: Ctx): Cmd {
  const open = markdownDocuments(ctx, "agent-projects", {
    render: async () => projectsReport(await (await ctx.ready()).send(requests.projects, {})),
    title: () => "Projects",
  });
  return () => open("/projects.md");
}

/** Agent: MCP Servers: each project's MCP servers, their status and tools, as a read-only Markdown document. */
export function showMcp(ctx: Ctx): Cmd {
  const open = markdownDocuments(ctx, "agent-mcp", {
    render: async () => mcpReport(await (await ctx.ready()).send(requests.mcp, {})),
    title: () => "MCP Servers",
  });
  return () => open("/mcp.md");
}

/** Agent: Background Processes: the running background processes of every session; the one chosen is stopped. */
export function backgroundProcesses(ctx: Ctx): Cmd {
  return async () => {
    const client = await ctx.ready();
    const list = await client.send(requests.processes, {});
    if (list.length === 0) {
      void vscode.window.showInformationMessage("No background processes are running.");
      return;
    }
    const pick = await vscode.window.showQuickPick(
      list.map((p) => ({ ...processItem(p), process: p })),
      { title: "Stop which background process?" },
    );
    if (!pick) {
      return;
    }
    const a = { session: pick.process.session, id: pick.process.id };
    void vscode.window.showInformationMessage(stoppedProcess(a, await client.send(requests.stopProcess, a)));
  };
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
    const r = await (await ctx.ready()).send(requests.deleteSession, { session });
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

/**
 * Agent: Select Model: one of the endpoint's models (agent.models), kept for
 * this workspace and named by every run from then on; the server keeps
 * running. An endpoint without a model list: the user types the name.
 */
export function selectModel(ctx: Ctx): Cmd {
  return async () => {
    const chosen = ctx.models.get() ?? "";
    let list;
    try {
      list = await (await ctx.ready()).send(requests.models, {});
    } catch (e) {
      const why = reasonOf(e);
      if (why && why.reason !== "model-unknown") {
        return offerFix(reasonText(why), why.reason); // no key, a refused key, out of reach: that first
      }
      const typed = await vscode.window.showInputBox({
        title: "Agent: Select Model",
        prompt: `The endpoint lists no models (${errorText(e)}). Type a model name for this workspace; empty: the settings' model.`,
        value: chosen,
        ignoreFocusOut: true,
      });
      return typed === undefined ? undefined : pickModel(ctx, typed.trim() || undefined);
    }
    const fallback = { label: "$(discard) Settings' model", description: list.current, model: undefined as string | undefined };
    const pick = await vscode.window.showQuickPick([...list.models.map((m) => ({ ...modelItem(m, list, chosen), model: m.id })), fallback], { title: `Model for this workspace (${list.baseURL})`, matchOnDetail: true });
    return pick ? pickModel(ctx, pick.model) : undefined;
  };
}

/** Agent: Select Mode: agent, plan or ask for this workspace's next runs (docs/modes.md). */
export function selectMode(ctx: Ctx): Cmd {
  return async () => {
    const pick = await vscode.window.showQuickPick(modeItems(ctx.mode.get()), { title: "Agent mode for this workspace" });
    if (pick) {
      await ctx.mode.set(pick.mode);
      vscode.window.setStatusBarMessage(`agent: the next runs are in ${pick.mode} mode`, 5000);
    }
  };
}

async function pickModel(ctx: Ctx, model: string | undefined): Promise<void> {
  await ctx.models.set(model);
  vscode.window.setStatusBarMessage(`agent: the next runs use ${model ?? "the settings' model"}`, 5000);
}

/** Agent: Show Chat: reveals the chat view; with session, showing that session. */
export function showChat(ctx: Ctx): Cmd {
  return async (session?: string) => {
    await vscode.commands.executeCommand("agentLsp.chat.focus");
    ctx.runs.showInChat(typeof session === "string" ? session : undefined);
  };
}

export function showOutput(ctx: Ctx): Cmd {
  return () => ctx.output.show(true);
}

export function restart(ctx: Ctx): Cmd {
  return () => ctx.client.restart();
}

/** Agent: About: the extension's and the server's versions, a warning when they differ; also written to the Agent output. */
export function about(ctx: Ctx): Cmd {
  return async () => {
    const r = aboutReport(await ctx.client.about());
    ctx.output.appendLine(r.text + (r.warning ? ` ${r.warning}` : ""));
    if (r.warning) {
      void vscode.window.showWarningMessage(`${r.text}. ${r.warning}`);
    } else {
      void vscode.window.showInformationMessage(r.text);
    }
  };
}

type About = { uri: vscode.Uri; range: vscode.Range };

/** The active editor's selection, unless it is empty. */
function selection(): About | undefined {
  const editor = vscode.window.activeTextEditor;
  return editor && !editor.selection.isEmpty ? { uri: editor.document.uri, range: editor.selection } : undefined;
}

/** agent.run's arguments for prompt, about a selection when given. */
function promptArgs(prompt: string, about: About | undefined): RunArgs {
  return { prompt: prompt.trim(), ...(about && { uri: about.uri.toString(), range: toRange(about.range) }) };
}

/**
 * The session a follow-up goes to: the one running in this window (the user
 * picks when several are), else the session of the last run, else one the
 * user picks.
 */
async function currentSession(ctx: Ctx): Promise<string | undefined> {
  const running = ctx.runs.list().filter((r): r is typeof r & { session: string } => r.session !== undefined);
  const sessions = [...new Map(running.map((r) => [r.session, r])).values()];
  const [only] = sessions;
  if (only && sessions.length === 1) {
    return only.session;
  }
  if (sessions.length > 1) {
    const pick = await vscode.window.showQuickPick(
      sessions.map((r) => ({ label: r.title, description: r.session, ...(r.message !== undefined && { detail: r.message }), session: r.session })),
      { title: "Follow up on which running session?" },
    );
    return pick?.session;
  }
  return ctx.lastSession ?? (await pickSession(ctx, "Follow up on which session?"));
}

/** Asks the user for one of the server's sessions that pass filter. */
async function pickSession(ctx: Ctx, title: string, filter?: (s: SessionInfo) => boolean): Promise<string | undefined> {
  const all = await (await ctx.ready()).send(requests.sessions, {});
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

/** The chat's label of a selection: "selection greet.go:3-5". */
function label(about: About): string {
  return `selection ${vscode.workspace.asRelativePath(about.uri)}:${about.range.start.line + 1}-${about.range.end.line + 1}`;
}

function where(uri: vscode.Uri, range: vscode.Range): string {
  return `${vscode.workspace.asRelativePath(uri)} lines ${range.start.line + 1}-${range.end.line + 1}`;
}

function toRange(r: vscode.Range): NonNullable<RunArgs["range"]> {
  return { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } };
}
