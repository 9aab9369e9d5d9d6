// The tokens (and cost) of the runs of this window: the usage events of each
// session, and a status bar item with the latest run's totals.
import * as vscode from "vscode";
import type { CommandId } from "./commands";
import { dollars, tokens, usageText } from "./format";
import type { UsageEvent } from "./protocol";

export class UsageStatus implements vscode.Disposable {
  private item = vscode.window.createStatusBarItem("agentLsp.usage", vscode.StatusBarAlignment.Left, 8);
  /** The latest usage event of each session. */
  private last = new Map<string, UsageEvent>();

  constructor() {
    this.item.name = "Agent Usage";
    this.item.command = "agentLsp.showChat" satisfies CommandId;
  }

  /** Records ev and shows its run's totals. */
  record(ev: UsageEvent): void {
    this.last.set(ev.session, ev);
    this.item.text = `$(pulse) ${usageText(ev.run)}`;
    const cost = (c?: number) => (c ? `, ${dollars(c)}` : "");
    this.item.tooltip = [
      `Session ${ev.session}: ${tokens(ev.run.prompt)} prompt + ${tokens(ev.run.completion)} completion tokens${cost(ev.run.cost)} so far`,
      `Last call (${ev.model}${ev.contextId ? `, ${ev.contextId}` : ""}): ${ev.prompt} + ${ev.completion} tokens in a ${tokens(ev.contextTokens)} context${cost(ev.cost)}`,
    ].join("\n");
    this.item.show();
  }

  /** The latest usage event of session. */
  of(session: string): UsageEvent | undefined {
    return this.last.get(session);
  }

  dispose(): void {
    this.item.dispose();
  }
}
