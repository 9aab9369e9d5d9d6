// What a run that cannot start, or failed, for a reason a setting fixes
// offers: a refused agent.run (JSON-RPC error data.reason) or a failed run's
// reason gets the action that fixes it (Set API Key, Pick a Model, Open
// Settings), never Resume; each shows once while it is open.
import * as vscode from "vscode";
import type { CommandId } from "./commands";
import { escapeHtml } from "./markdown";
import type { EndpointInfo, Reason, ReasonData } from "./protocol";

/** The actions of each reason, by label: what each runs. */
const fixes = {
  "Set API Key": () => vscode.commands.executeCommand("agentLsp.setApiKey" satisfies CommandId),
  "Pick a Model": () => vscode.commands.executeCommand("agentLsp.selectModel" satisfies CommandId),
  "Open Settings": () => vscode.commands.executeCommand("workbench.action.openSettings", "agentLsp"),
} satisfies Record<string, () => Thenable<unknown>>;

export type Fix = keyof typeof fixes;

/** The actions a reason offers, first the one that fixes it. */
export const reasonFixes: Record<Reason, Fix[]> = {
  "no-api-key": ["Set API Key", "Open Settings"],
  "key-refused": ["Set API Key", "Open Settings"],
  "model-unknown": ["Pick a Model", "Open Settings"],
  "endpoint-unreachable": ["Open Settings"],
};

/** The data of a JSON-RPC error refused for a reason, else undefined. */
export function reasonOf(e: unknown): ReasonData | undefined {
  const data = typeof e === "object" && e !== null ? (e as { data?: unknown }).data : undefined;
  const reason = typeof data === "object" && data !== null ? (data as { reason?: unknown }).reason : undefined;
  return typeof reason === "string" && reason in reasonFixes ? (data as ReasonData) : undefined;
}

/** A sentence for a reason in this editor's words. */
export function reasonText(d: ReasonData): string {
  switch (d.reason) {
    case "no-api-key":
      return `agent-lsp: no API key for ${d.baseURL}. Set one (Agent: Set API Key), or set agentLsp.baseURL to a server that needs none.`;
    case "key-refused":
      return `agent-lsp: ${d.baseURL} refused the API key. Set a valid one (Agent: Set API Key).`;
    case "model-unknown":
      return `agent-lsp: ${d.baseURL} does not offer the model "${d.model}". Pick one (Agent: Select Model).`;
    case "endpoint-unreachable":
      return `agent-lsp: cannot reach ${d.baseURL}. Check agentLsp.baseURL, or start the model server.`;
  }
}

/** The messages showing now: each is shown once while it is open. */
const open = new Set<string>();

/** Shows message as an error with reason's actions, once while it is open; runs the one picked. */
export async function offerFix(message: string, reason: Reason): Promise<void> {
  if (open.has(message)) {
    return;
  }
  open.add(message);
  try {
    const pick = await vscode.window.showErrorMessage<Fix>(message, ...reasonFixes[reason]);
    if (pick) {
      await fixes[pick]();
    }
  } finally {
    open.delete(message);
  }
}

/** An error whose message was shown with its actions already: the command's wrapper shows it no more. */
export class ShownError extends Error {
  constructor(
    message: string,
    readonly reason: Reason,
  ) {
    super(message);
  }
}

/** True for an error offerFix has shown. */
export function shown(e: unknown): boolean {
  return e instanceof ShownError;
}

/** The commands of the actions a chat line can link to, by label. */
const fixCommands: Record<Fix, string> = {
  "Set API Key": "agentLsp.setApiKey",
  "Pick a Model": "agentLsp.selectModel",
  "Open Settings": "workbench.action.openSettings",
};

/** The line an empty chat shows: the model, the endpoint, whether a key is set, and the action when a key is missing. */
export function endpointLine(ep: EndpointInfo): { text: string; fix?: Fix } {
  const key = ep.keySet ? "API key set" : `no API key (${ep.apiKeyEnv})`;
  const text = `Model ${ep.model} at ${ep.baseURL} · ${key}`;
  return ep.needsKey ? { text: `${text}: this endpoint needs one.`, fix: "Set API Key" } : { text };
}

/** endpointLine as the chat's HTML: its action a link the page turns into the command (data-open "command:ID"). */
export function endpointHtml(ep: EndpointInfo): string {
  const { text, fix } = endpointLine(ep);
  const link = fix ? ` <a href="#" data-open="command:${fixCommands[fix]}">${escapeHtml(fix)}</a>` : "";
  return `<div class="line endpoint${fix ? " error" : ""}">${escapeHtml(text)}${link}</div>`;
}

/** The command a chat link names with "command:ID", when it is one of the fixes. */
export function fixCommand(uri: string): string | undefined {
  const id = uri.startsWith("command:") ? uri.slice("command:".length) : "";
  return Object.values(fixCommands).includes(id) ? id : undefined;
}
