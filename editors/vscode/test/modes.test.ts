// Run this plan (plan.ts), the background processes section (processes.ts)
// and the budget settings (config.ts's limits).
import assert from "node:assert/strict";
import { test } from "node:test";
import { defaultSettings, initializationOptions, readSettings, type SettingProblem } from "../src/config";
import { PlanOffers, planPrompt } from "../src/plan";
import { processesHtml } from "../src/processes";
import type { FinishedRun } from "../src/protocol";

const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };
const finished = (r: Partial<FinishedRun>): FinishedRun => ({ session: "s-1", reply: "", edits: 0, steps: 2, usage, status: "done", ...r });

test("a plan run that ends with a plan offers Run this plan; a later run of the session takes the offer back", () => {
  const offers = new PlanOffers();
  const [item] = offers.items(finished({ plan: "1. Add Farewell.\n2. Test it." }));
  assert.ok(item, "a plan is offered");
  assert.equal(item.id, "plan-s-1");
  assert.match(item.html, /<button data-run-plan="s-1"[^>]*>Run this plan<\/button>/);
  assert.equal(offers.get("s-1"), "1. Add Farewell.\n2. Test it.");
  assert.equal(planPrompt(offers.get("s-1") ?? ""), "Carry out this plan:\n\n1. Add Farewell.\n2. Test it.");

  assert.deepEqual(offers.items(finished({ reply: "done it" })), [{ id: "plan-s-1", html: "" }], "the agent run that followed empties the offer");
  assert.equal(offers.get("s-1"), undefined);
  assert.deepEqual(offers.items(finished({ reply: "x" })), [], "nothing to take back");
  assert.deepEqual(offers.items(finished({ status: "cancelled", plan: "half a plan" })), [], "only a run that finished offers its plan");
  assert.deepEqual(offers.items(finished({ plan: "   " })), [], "an empty plan is none");
});

test("the processes section lists each process with Stop, escaped, and hides when there are none", () => {
  assert.equal(processesHtml([]), "");
  const html = processesHtml([{ session: "s-1", id: "p1", command: "python3 -m http.server <8000>", project: "sample", started: "2026-11-29T08:00:00Z" }]);
  assert.match(html, /Background processes \(1\)/);
  assert.match(html, /<code>python3 -m http\.server &lt;8000&gt;<\/code>/);
  assert.match(html, /data-stop-process="p1" data-session="s-1"[^>]*>Stop<\/button>/);
});

test("the budget settings go to the server as limits.maxTokens and limits.maxCost; wrong values are left out", () => {
  const values: Record<string, unknown> = { "limits.maxTokens": 50000, "limits.maxCost": 0.5 };
  const s = readSettings((k) => values[k] as never);
  assert.deepEqual([s["limits.maxTokens"], s["limits.maxCost"]], [50000, 0.5]);
  assert.deepEqual(initializationOptions(s)["limits"], { maxTokens: 50000, maxCost: 0.5 });
  assert.equal("limits" in initializationOptions(defaultSettings), false, "unset: no limit is sent");

  const problems: SettingProblem[] = [];
  const bad: Record<string, unknown> = { "limits.maxTokens": 1.5, "limits.maxCost": -1 };
  const t = readSettings((k) => bad[k] as never, problems);
  assert.deepEqual([t["limits.maxTokens"], t["limits.maxCost"]], [null, null]);
  assert.deepEqual(
    problems.map((p) => p.setting),
    ["agentLsp.limits.maxTokens", "agentLsp.limits.maxCost"],
  );
  const zero: Record<string, unknown> = { "limits.maxCost": 0 };
  assert.equal(readSettings((k) => zero[k] as never)["limits.maxCost"], null, "0 USD is no limit");
});
