// "Run this plan": a plan run that ends with a plan (its result's plan) gets a
// button under its end line in the chat; the button starts an agent-mode run
// in the same session with the plan as its prompt, whatever mode the
// workspace's runs use (docs/modes.md).
import type { ChatItem } from "./chatModel";
import type { Ctx } from "./ctx";
import { followUpRun } from "./launch";
import { escapeHtml } from "./markdown";
import type { FinishedRun, RunResult } from "./protocol";

/** The prompt of the run that carries out plan. */
export function planPrompt(plan: string): string {
  return `Carry out this plan:\n\n${plan.trim()}`;
}

/** The latest plan of each session whose plan run ended in this window. */
export class PlanOffers {
  private plans = new Map<string, string>();

  /**
   * The chat items r adds: a "Run this plan" button when r is a plan run
   * that ended with a plan; none for any other result (which also drops
   * the session's earlier offer: a newer run went on from it).
   */
  items(r: FinishedRun): ChatItem[] {
    const plan = r.status === "done" ? (r.plan ?? "").trim() : "";
    const id = `plan-${r.session}`;
    if (!plan) {
      const had = this.plans.delete(r.session);
      return had ? [{ id, html: "" }] : [];
    }
    this.plans.set(r.session, plan);
    return [
      {
        id,
        html:
          `<div class="line plan-offer"><button data-run-plan="${escapeHtml(r.session)}" title="Start an agent-mode run in this session with the plan as its prompt">Run this plan</button>` +
          ` <span class="note">agent mode: edits and runs commands as your rules allow</span></div>`,
      },
    ];
  }

  /** The plan offered for session, if any. */
  get(session: string): string | undefined {
    return this.plans.get(session);
  }
}

/**
 * Starts an agent-mode run of session with its offered plan as the prompt
 * (a follow-up: queued when the session's run is going).
 */
export async function runPlan(ctx: Ctx, offers: PlanOffers, session: string): Promise<RunResult | undefined> {
  const plan = offers.get(session);
  if (plan === undefined) {
    throw new Error("no plan to run in this session: run a plan in plan mode first");
  }
  const prompt = planPrompt(plan);
  return followUpRun(ctx, session, { prompt, mode: "agent" }, { title: "Run this plan", prompt });
}
