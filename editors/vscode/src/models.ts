// The model runs use in this workspace: "Agent: Select Model" picks one of
// the endpoint's models (agent.models), stored in the workspace's state, and
// every run then names it (agent.run's model); a status bar item shows it.
// Switching never restarts the server: the model is an argument of each run.
import * as vscode from "vscode";
import type { CommandId } from "./commands";

/** The workspace-state key of the chosen model. */
export const modelKey = "agentLsp.selectedModel";

export class ModelChoice implements vscode.Disposable {
  private item = vscode.window.createStatusBarItem("agentLsp.model", vscode.StatusBarAlignment.Left, 9);

  constructor(
    private state: vscode.Memento,
    /** The agentLsp.model setting ("" when unset). */
    private settingModel: () => string,
  ) {
    this.item.name = "Agent Model";
    this.item.command = "agentLsp.selectModel" satisfies CommandId;
    this.refresh();
  }

  /** The model this workspace picked, or undefined for the settings' (and the server's) default. */
  get(): string | undefined {
    return this.state.get<string>(modelKey) || undefined;
  }

  /** Stores model for this workspace; undefined goes back to the settings' model. */
  async set(model: string | undefined): Promise<void> {
    await this.state.update(modelKey, model || undefined);
    this.refresh();
  }

  /** Shows the model runs use now. */
  refresh(): void {
    const chosen = this.get();
    const name = chosen ?? (this.settingModel() || "default model");
    this.item.text = `$(sparkle) ${name}`;
    this.item.tooltip = chosen
      ? `The agent's runs in this workspace use ${chosen}. Click to pick another model.`
      : `The agent uses ${this.settingModel() ? `agentLsp.model (${name})` : "the server's model"}. Click to pick a model for this workspace.`;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}

/** An in-memory Memento, for a context without workspace state (tests). */
export function memoryState(): vscode.Memento {
  const m = new Map<string, unknown>();
  return {
    keys: () => [...m.keys()],
    get: <T>(key: string, fallback?: T) => (m.has(key) ? (m.get(key) as T) : fallback) as T,
    update: (key: string, value: unknown) => {
      if (value === undefined) {
        m.delete(key);
      } else {
        m.set(key, value);
      }
      return Promise.resolve();
    },
  };
}
