// Accept All and Reject All: the server hands edits that need confirmation
// to the editor one at a time, the others wait behind it, so "all" are the
// edits the agent's current step has asked for: the edit_file and
// create_file calls of the AI messages whose tool calls have not ended yet
// (the message event names them before any of them runs). Accept All decides
// the edit on screen and arms those calls: an edit that arrives for the file
// of an armed call is decided the same way, except that an accept never
// covers a protected file (it keeps its own confirmation). A call's arming
// ends with its tool.end; edits of later steps are asked for again. No vscode
// import.
import type { AgentEvent } from "./protocol";

/** The tools whose call makes one edit of the file its path argument names. */
const editTools = new Set(["edit_file", "create_file"]);

export type BulkDecision = "accept" | "reject";

/** An edit call not ended yet: the file it edits (as the model named it). */
interface OpenCall {
  path: string;
  armed?: BulkDecision;
}

export class Bulk {
  /** The edit calls not ended yet, by session, context and call id. */
  private calls = new Map<string, OpenCall>();

  /** Follows the runs' events: AI messages open their edit calls, tool.end closes one. */
  event(ev: AgentEvent): void {
    const scope = `${ev.session}/${ev.contextId ?? ""}/`;
    if (ev.type === "message" && ev.message.role === "ai") {
      for (const c of ev.message.toolCalls ?? []) {
        const path = editTools.has(c.name) ? pathArg(c.args) : "";
        if (path) {
          this.calls.set(scope + c.id, { path });
        }
      }
    } else if (ev.type === "tool.end") {
      this.calls.delete(scope + ev.callId);
    } else if (ev.type === "run.end" && !ev.contextId) {
      for (const k of [...this.calls.keys()].filter((k) => k.startsWith(`${ev.session}/`))) {
        this.calls.delete(k);
      }
    }
  }

  /** Arms every edit call not ended yet with d; returns how many it armed. */
  arm(d: BulkDecision): number {
    for (const c of this.calls.values()) {
      c.armed = d;
    }
    return this.calls.size;
  }

  /** How many edit calls are armed now. */
  armed(): number {
    return [...this.calls.values()].filter((c) => c.armed).length;
  }

  /** Forgets every call (the runs ended: none of their edits can come any more). */
  clear(): void {
    this.calls.clear();
  }

  /**
   * The decision an arriving edit of the files at paths (absolute, "/"
   * separated) gets from an armed call of one of them; undefined when none is
   * armed for them, or for an accept of a protected file.
   */
  decide(paths: string[], isProtected: boolean): BulkDecision | undefined {
    for (const c of this.calls.values()) {
      if (c.armed && paths.some((p) => samePath(p, c.path))) {
        return c.armed === "accept" && isProtected ? undefined : c.armed;
      }
    }
    return undefined;
  }
}

/** The path argument of a tool call's JSON arguments, "" when it has none. */
function pathArg(args: string): string {
  try {
    const a = JSON.parse(args) as { path?: unknown };
    return typeof a.path === "string" ? a.path : "";
  } catch {
    return "";
  }
}

/** True when file (absolute) is the path a model gave: itself, or relative to a project root ("greet.go", "./sub/x.go"). */
export function samePath(file: string, given: string): boolean {
  const rel = given.replace(/\\/g, "/").replace(/^(\.\/)+/, "");
  if (rel === "" || rel.split("/").includes("..")) {
    return false;
  }
  return rel.startsWith("/") ? file === rel : file.endsWith("/" + rel);
}
