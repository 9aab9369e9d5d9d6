// The runs started from this window, the status bar item that shows the
// latest one's step while any is going (a click shows the chat), the events
// of a run beginning (the chat shows it) and of the last one ending, and
// whether the chat shows a session now (then a run's end needs no
// notification).
import * as vscode from "vscode";
import type { CommandId } from "./commands";
import type { RunResult } from "./protocol";

/** A run started from this window. */
export interface Run {
  /** The work-done progress token the server reports the run on. */
  readonly token: string;
  readonly title: string;
  /** The run's session: known from the start for a resume, from its run.start event for a new run. */
  session?: string | undefined;
  /** The latest progress message. */
  message?: string;
  /** Cancels the request itself ($/cancelRequest), for a run whose session is not known yet. */
  readonly source: vscode.CancellationTokenSource;
  /** The prompt as the user gave it; none for a resume. */
  readonly prompt?: string;
  /** What the prompt is about, as the chat labels it ("selection greet.go:3-5"). */
  readonly about?: string | undefined;
  /** The chat sent it: its prompt shows there already. */
  readonly fromChat?: boolean;
}

/** What a run is begun with besides its title. */
export type RunOpts = Pick<Run, "session" | "prompt" | "about" | "fromChat">;

export class Runs implements vscode.Disposable {
  private runs = new Map<string, Run>();
  private next = 0;
  private status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  private idle = new vscode.EventEmitter<void>();
  private begun = new vscode.EventEmitter<Run>();
  private show = new vscode.EventEmitter<string | undefined>();
  private ended = new vscode.EventEmitter<{ run: Run; result?: RunResult | undefined }>();
  /** Fires when the last run going ends. */
  readonly onIdle = this.idle.event;
  /** Fires when a run begins (the chat shows it). */
  readonly onBegin = this.begun.event;
  /** Fires when a run ends, with its result (none when it failed or was cancelled before its session was known). */
  readonly onEnd = this.ended.event;
  /** Fires when a session is to show in the chat (undefined: the one it shows). */
  readonly onShowInChat = this.show.event;
  /** Whether the chat shows session to the user now; the chat view sets it. */
  chatShows: (session: string) => boolean = () => false;

  constructor() {
    this.status.command = "agentLsp.showChat" satisfies CommandId;
  }

  /** Tracks a new run until end. */
  begin(title: string, opts: RunOpts = {}): Run {
    const run: Run = { token: `agent-lsp-vscode:${++this.next}`, title, source: new vscode.CancellationTokenSource(), ...opts };
    this.runs.set(run.token, run);
    this.update();
    this.begun.fire(run);
    return run;
  }

  /** Asks the chat to show session (undefined: the one it shows). */
  showInChat(session?: string): void {
    this.show.fire(session);
  }

  /** Records run's latest step. */
  progress(run: Run, message: string): void {
    run.message = message;
    this.update();
  }

  /** Ends run, with its result when it has one. */
  end(run: Run, result?: RunResult): void {
    const ended = this.runs.delete(run.token);
    run.source.dispose();
    this.update();
    if (ended) {
      this.ended.fire({ run, result });
    }
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
    const latest = runs.at(-1);
    if (!latest) {
      this.status.hide();
      return;
    }
    const more = runs.length > 1 ? ` (+${runs.length - 1})` : "";
    this.status.text = `$(loading~spin) ${latest.message ? "agent: " + latest.message : latest.title}${more}`;
    this.status.tooltip = "agent-lsp is working; click to show the chat (Stop there, or Agent: Cancel, stops it).";
    this.status.show();
  }

  dispose(): void {
    for (const r of this.runs.values()) {
      r.source.cancel();
    }
    this.idle.dispose();
    this.begun.dispose();
    this.show.dispose();
    this.ended.dispose();
    this.status.dispose();
  }
}
