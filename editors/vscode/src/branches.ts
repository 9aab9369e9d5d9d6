// Branches that runs and subagents in git worktrees report (run.end and
// subagent.end with a branch; docs/worktrees.md): a notification offers to
// show the branch's diff, merge it or delete it.
import { execFile } from "node:child_process";
import * as vscode from "vscode";
import type { AgentEvent } from "./protocol";

/** A branch a run reported, and the folder of the repository that has it. */
export interface ReportedBranch {
  branch: string;
  dir: string;
}

/** Runs git in dir with the repository's hooks and fsmonitor off; rejects with git's message. */
export function git(dir: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("git", ["-C", dir, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", ...args], { maxBuffer: 32 << 20 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(stderr.trim() || err.message));
      } else {
        resolve(stdout);
      }
    });
  });
}

/** The actions offered for a branch, as their buttons read. */
export const actions = { diff: "Show Diff", merge: "Merge", remove: "Delete Branch" } as const;

/** The branches reported in this window and not merged or deleted here; owned by the extension host's one thread. */
export class Branches implements vscode.Disposable {
  readonly reported: ReportedBranch[] = [];
  private sub: vscode.Disposable;

  constructor(
    onEvent: vscode.Event<AgentEvent>,
    /** The folders to look for a branch's repository in (the workspace folders). */
    private folders: () => string[] = () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
  ) {
    this.sub = onEvent((ev) => {
      if ((ev.type === "run.end" || ev.type === "subagent.end") && ev.branch) {
        void this.note(ev.branch);
      }
    });
  }

  /** Notes a reported branch (once) and offers what to do with it. */
  async note(branch: string): Promise<void> {
    if (this.reported.some((b) => b.branch === branch)) {
      return;
    }
    const dir = await this.repository(branch);
    if (!dir) {
      return;
    }
    const b = { branch, dir };
    this.reported.push(b);
    const pick = await vscode.window.showInformationMessage(`Agent: changes on branch ${branch}`, actions.diff, actions.merge, actions.remove);
    if (pick) {
      await this.act(b, pick);
    }
  }

  /** The folder whose repository has branch. */
  private async repository(branch: string): Promise<string | undefined> {
    for (const dir of this.folders()) {
      try {
        await git(dir, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`]);
        return dir;
      } catch {
        // not this folder's repository
      }
    }
    return undefined;
  }

  /** Does what the user picked; a git failure is shown, never thrown. */
  async act(b: ReportedBranch, pick: string): Promise<void> {
    try {
      switch (pick) {
        case actions.diff: {
          const text = await git(b.dir, ["diff", "--no-ext-diff", `HEAD...${b.branch}`]);
          const doc = await vscode.workspace.openTextDocument({ content: text || "(no change)\n", language: "diff" });
          await vscode.window.showTextDocument(doc);
          return;
        }
        case actions.merge:
          await git(b.dir, ["merge", "--no-ff", "--no-edit", b.branch]);
          this.forget(b.branch);
          void vscode.window.showInformationMessage(`Agent: merged ${b.branch}`);
          return;
        case actions.remove:
          await git(b.dir, ["branch", "-D", b.branch]);
          this.forget(b.branch);
          void vscode.window.showInformationMessage(`Agent: deleted ${b.branch}`);
          return;
      }
    } catch (err) {
      void vscode.window.showErrorMessage(`Agent: ${pick} ${b.branch}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private forget(branch: string): void {
    const i = this.reported.findIndex((b) => b.branch === branch);
    if (i >= 0) {
      this.reported.splice(i, 1);
    }
  }

  dispose(): void {
    this.sub.dispose();
  }
}
