// Entry point: one agent-lsp server per window (client.ts), the context the
// commands work in (ctx.ts), the commands (commands.ts), and the reaction to
// settings changes.
import * as vscode from "vscode";
import { AgentClient } from "./client";
import { registerCommands } from "./commands";
import { readSettings, type Settings } from "./config";
import { Ctx } from "./ctx";

let client: AgentClient | undefined;

/** Activates the extension: one agent-lsp server per window. */
export async function activate(context: vscode.ExtensionContext): Promise<void> {
  // The client hands agent/event to the context, which reaches the server through the client.
  const agent = new AgentClient(context, settings, (ev) => ctx.onEvent(ev));
  const ctx = new Ctx(agent, settings);
  client = agent;
  registerCommands(ctx);
  context.subscriptions.push(ctx, agent, vscode.workspace.onDidChangeConfiguration((e) => void settingsChanged(ctx, e)));
  await agent.start();
}

/** Stops the server. */
export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

/** The agentLsp.* settings as they are now. */
function settings(): Settings {
  const cfg = vscode.workspace.getConfiguration("agentLsp");
  return readSettings((key) => cfg.get(key));
}

/** The edit mode applies to the next run as it is; other settings restart the server, asking first while a run goes. */
async function settingsChanged(ctx: Ctx, e: vscode.ConfigurationChangeEvent): Promise<void> {
  if (e.affectsConfiguration("agentLsp.edits")) {
    const review = ctx.settings().edits === "review";
    vscode.window.setStatusBarMessage(review ? "agent: edits now open in the refactor preview first" : "agent: edits now apply directly", 8000);
    return;
  }
  if (!e.affectsConfiguration("agentLsp")) {
    return;
  }
  const restart =
    !ctx.runs.busy() ||
    (await vscode.window.showInformationMessage(
      "agent-lsp settings changed. Restart the server now? The running agent is stopped and can be resumed.",
      "Restart",
    )) === "Restart";
  if (restart) {
    await ctx.client.restart();
  }
}
