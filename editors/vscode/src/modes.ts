// The mode runs use in this workspace: "Agent: Select Mode" (the status bar
// item, or the chat's mode link) picks agent, plan or ask, stored in the
// workspace's state; every run then names it (agent.run's mode). Plan and
// ask offer the agent only the tools that read (docs/modes.md).
import * as vscode from "vscode";
import type { CommandId } from "./commands";
import { modes, type Mode } from "./protocol";

/** The workspace-state key of the chosen mode. */
export const modeKey = "agentLsp.selectedMode";

/** What each mode does, as the picker and the status item's tooltip say it. */
export const modeDescriptions: Record<Mode, string> = {
  agent: "reads, edits and runs commands (as your rules allow)",
  plan: "only reads, and answers with a plan; changes nothing",
  ask: "only reads, and answers questions; changes nothing",
};

const icons: Record<Mode, string> = { agent: "$(tools)", plan: "$(checklist)", ask: "$(question)" };

export class ModeChoice implements vscode.Disposable {
  private item = vscode.window.createStatusBarItem("agentLsp.mode", vscode.StatusBarAlignment.Left, 8);
  private changed = new vscode.EventEmitter<Mode>();
  /** Fires with the new mode when the user picks one. */
  readonly onDidChange = this.changed.event;

  constructor(private state: vscode.Memento) {
    this.item.name = "Agent Mode";
    this.item.command = "agentLsp.selectMode" satisfies CommandId;
    this.refresh();
  }

  /** The mode this workspace's runs use (agent unless one was picked). */
  get(): Mode {
    const m = this.state.get<string>(modeKey);
    return modes.includes(m as Mode) ? (m as Mode) : "agent";
  }

  /** Stores mode for this workspace. */
  async set(mode: Mode): Promise<void> {
    await this.state.update(modeKey, mode === "agent" ? undefined : mode);
    this.refresh();
    this.changed.fire(mode);
  }

  /** Shows the mode runs use now. */
  refresh(): void {
    const m = this.get();
    this.item.text = `${icons[m]} ${m}`;
    this.item.tooltip = `Agent mode: ${m}, the agent ${modeDescriptions[m]}. Click to switch.`;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
    this.changed.dispose();
  }
}

/** The picker's items: each mode, the current one marked. */
export function modeItems(current: Mode): (vscode.QuickPickItem & { mode: Mode })[] {
  return modes.map((m) => ({ label: `${icons[m]} ${m}`, description: m === current ? "current" : "", detail: `The agent ${modeDescriptions[m]}.`, mode: m }));
}
