// Entry point: one agent-lsp server per window (client.ts), started when a
// command or the chat first needs it (or at once with agentLsp.autoStart),
// once the workspace is trusted; the context the commands work in (ctx.ts),
// the commands (commands.ts), the chat view (chat.ts), the review of edits
// that need confirmation (review.ts), and the reaction to settings changes
// (settingsChange.ts).
import * as vscode from "vscode";
import { ChatView } from "./chat";
import { registerCheckpointContents } from "./rewind";
import { Branches } from "./branches";
import { AgentClient } from "./client";
import { registerCommands } from "./commands";
import { readSettings, type SettingProblem, type Settings } from "./config";
import { Ctx } from "./ctx";
import { watchSettings } from "./settingsChange";

let client: AgentClient | undefined;

/** Activates the extension: one agent-lsp server per window. */
export function activate(context: vscode.ExtensionContext): void {
  // The client hands agent/event and its own transcript lines to the context, which reaches the server through the client.
  const agent: AgentClient = new AgentClient(
    context,
    settings,
    (ev) => ctx.onEvent(ev),
    (line) => ctx.output.appendLine(line),
    (params, next) => ctx.reviews.handle(params, next),
  );
  const ctx: Ctx = new Ctx(agent, settings, context.workspaceState);
  client = agent;
  registerCommands(ctx);
  watchSettings(ctx);
  const chat = new ChatView(ctx, context.extensionUri);
  ctx.pushCleanup(chat, chat.register(), registerCheckpointContents(), ...ctx.reviews.register());
  ctx.pushCleanup(new Branches(ctx.onAgentEvent)); // a branch a run in a worktree reports: diff, merge or delete
  // In Restricted Mode (package.json: untrustedWorkspaces "limited") the server waits for trust.
  const autoStart = () => settings().autoStart && void agent.start();
  context.subscriptions.push(ctx, agent, vscode.workspace.onDidGrantWorkspaceTrust(autoStart));
  // Otherwise the first command that needs the server starts it (Ctx.ready), with the settings as they are then.
  autoStart();
}

/** Stops the server. */
export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

/** The agentLsp.* settings as they are now; problems gets the values left out (config.ts). */
function settings(problems?: SettingProblem[]): Settings {
  const cfg = vscode.workspace.getConfiguration("agentLsp");
  return readSettings((key) => cfg.get(key), problems);
}
