// The runs started from this window, the status bar item that shows the
// latest one's step while any is going, and the event of the last one ending.
import * as vscode from "vscode";
import type { CommandId } from "./commands";

/** A run started from this window. */
export interface Run {
  /** The work-done progress token the server reports the run on. */
  readonly token: string;
  readonly title: string;
  /** The run's session: known from the start for a resume, from its run.start event for a new run. */
  session?: string;
  /** The latest progress message. */
  message?: string;
  /** Cancels the request itself ($/cancelRequest), for a run whose session is not known yet. */
  readonly source: vscode.CancellationTokenSource;
}

export class Runs implements vscode.Disposable {
  private runs = new Map<string, Run>();
  private next = 0;
  private status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  private idle = new vscode.EventEmitter<void>();
  /** Fires when the last run going ends. */
  readonly onIdle = this.idle.event;

  constructor() {
    this.status.command = "agentLsp.showOutput" satisfies CommandId;
  }

  /** Tracks a new run until end. */
  begin(title: string, session?: string): Run {
    const run: Run = { token: `agent-lsp-vscode:${++this.next}`, title, session, source: new vscode.CancellationTokenSource() };
    this.runs.set(run.token, run);
    this.update();
    return run;
  }

  /** Records run's latest step. */
  progress(run: Run, message: string): void {
    run.message = message;
    this.update();
  }

  end(run: Run): void {
    const ended = this.runs.delete(run.token);
    run.source.dispose();
    this.update();
    if (ended && this.runs.size === 0) {
      this.idle.fire();
    }
  }

  /** Binds a run.start event's session to the run still waiting for one, unless a run has it already. */
  started(session: string): void {
    const runs = this.list();
    const waiting = runs.find((r) => r.session === undefined);
    if (waiting && !runs.some((r) => r.session === session)) {
      waiting.session = session;
    }
  }

  /** The runs going, oldest first. */
  list(): Run[] {
    return [...this.runs.values()];
  }

  /** True while a run started here is going. */
  busy(): boolean {
    return this.runs.size > 0;
  }

  private update(): void {
    const runs = this.list();
    if (runs.length === 0) {
      this.status.hide();
      return;
    }
    const latest = runs[runs.length - 1];
    const more = runs.length > 1 ? ` (+${runs.length - 1})` : "";
    this.status.text = `$(loading~spin) ${latest.message ? "agent: " + latest.message : latest.title}${more}`;
    this.status.tooltip = "agent-lsp is working; click for the transcript. Agent: Cancel stops it.";
    this.status.show();
  }

  dispose(): void {
    for (const r of this.runs.values()) {
      r.source.cancel();
    }
    this.idle.dispose();
    this.status.dispose();
  }
}
