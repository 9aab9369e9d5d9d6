// Modes, budgets and background processes in the chat:
// - runThisPlan: with agentLsp.limits.maxTokens set (run.sh: 50,000) and plan mode picked, a
//   run in the chat shows its mode and what its budget leaves, ends with its
//   plan and a "Run this plan" button; the button starts an agent-mode run in
//   the same session whose prompt is the plan (the model's requests show
//   both: the plan run offered no edit tool, the next one did).
// - backgroundProcesses: a run that starts a background process shows it in
//   the chat's "Background processes" section with Stop; Stop ends it and the
//   section empties, while the run goes on.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The requests the scripted model received whose first user message contains match. */
function requestsOf(match) {
  let lines = [];
  try {
    lines = readFileSync(process.env.E2E_REQUESTS, "utf8").trim().split("\n").filter(Boolean);
  } catch {
    return [];
  }
  return lines.map((l) => JSON.parse(l)).filter((r) => JSON.stringify(r.messages.find((m) => m.role === "user")?.content ?? "").includes(match));
}

const toolNames = (r) => (r.tools ?? []).map((t) => t.function.name);

/** Picks mode with Agent: Select Mode and waits for the status bar to show it. */
async function selectMode(h, mode) {
  await h.palette("Agent: Select Mode (agent, plan, ask)"); // its whole title: "Agent: Select Mode" is the start of "Agent: Select Model"
  // The palette's own row says "(agent, plan, ask)": wait for the picker's descriptions of the modes.
  await h.waitFor(() => h.text(".quick-input-list").then((t) => t.includes("answers with a plan") && !t.includes("Select Mode")), "the modes in the quick pick", 30000);
  await h.page.keyboard.type(mode);
  await h.waitFor(() => h.text(".quick-input-list .monaco-list-row.focused").then((t) => t.includes(mode)), `${mode} focused`, 30000);
  await h.page.keyboard.press("Enter");
  await h.waitFor(() => h.text(".statusbar").then((t) => new RegExp(`\\b${mode}\\b`).test(t)), `mode ${mode} in the status bar`, 30000);
}

export async function runThisPlan(h) {
  const { page, chat, chatText, chatSend, waitFor, step, out } = h;
  await selectMode(h, "plan");
  await chat.click("#new");
  await waitFor(() => chat.evaluate(() => document.body.dataset.session === ""), "the new chat", 60000);
  await chatSend(chat, "VSC plan a farewell for the greeter");
  const planned = await waitFor(() => chatText(chat).then((t) => (t.includes("── done") && t.includes("Run this plan") ? t : "")), "the plan run's end and Run this plan", 120000);
  // The run's line: its mode, and what its budget leaves once the model's first answer counted.
  assert.match(planned, /plan mode: the agent only reads · [\d.]+k of 50\.0k tokens left/, `the run's mode and budget: ${planned}`);
  assert.match(planned, /Add Farewell to greet\.go/, planned);
  const session = await chat.evaluate(() => document.body.dataset.session);
  const [planRequest] = requestsOf("VSC plan a farewell");
  assert.ok(planRequest, "the model got the plan run's request");
  assert.ok(!toolNames(planRequest).includes("edit_file"), `the plan run offered edit_file: ${toolNames(planRequest)}`);
  await page.screenshot({ path: join(out, "plan.png") });
  step(`a plan run ended with Run this plan (session ${session})`);

  await chat.click("[data-run-plan]");
  const carried = await waitFor(() => chatText(chat).then((t) => ((t.match(/── done/g) ?? []).length === 2 && t.includes("Carried out the plan.") ? t : "")), "the run of the plan", 120000);
  assert.equal(await chat.evaluate(() => document.body.dataset.session), session, "the plan ran in its session");
  assert.match(carried, /Carry out this plan:/, "the plan shows as the run's prompt");
  assert.equal(await chat.$("[data-run-plan]"), null, "the offer goes once the plan ran");
  const runRequest = requestsOf("VSC plan a farewell").at(-1);
  const prompt = runRequest.messages.filter((m) => m.role === "user").at(-1);
  assert.match(JSON.stringify(prompt.content), /^"Carry out this plan:\\n\\n1\. Add `Farewell` to greet\.go\./, `the run's prompt: ${JSON.stringify(prompt.content).slice(0, 200)}`);
  assert.ok(toolNames(runRequest).includes("edit_file"), `the plan's run is in agent mode: ${toolNames(runRequest)}`);
  assert.match(await page.$eval(".statusbar", (el) => el.innerText), /\bplan\b/, "the workspace's mode stays plan");
  await page.screenshot({ path: join(out, "plan-run.png") });
  step("Run this plan ran the plan in agent mode, in the same session");

  await selectMode(h, "agent");
  await new Promise((r) => setTimeout(r, 2000));
}

export async function backgroundProcesses(h) {
  const { page, chat, chatText, chatSend, waitFor, step, out } = h;
  await chat.click("#new");
  await chatSend(chat, "VSC background sleeper, please");
  // Starting a background process asks (agentLsp.allow is application-scoped, and such a setting is
  // read only at the start in code-server: see setSetting): allow it once.
  const row = await waitFor(
    async () => {
      const allow = await page.$$(".notifications-toasts .monaco-button");
      for (const b of allow) {
        if ((await b.evaluate((el) => el.innerText.trim())) === "Allow once") await b.click();
      }
      return chat.$eval("#processes", (el) => (!el.hidden && el.innerText.includes("sleep 300") ? el.innerText : "")).catch(() => "");
    },
    "the background process in the chat",
    120000,
  );
  assert.match(row, /Background processes \(1\)/, row);
  assert.match(row, /sleep 300/, row);
  await page.screenshot({ path: join(out, "processes.png") });
  step("the chat lists the background process");

  await chat.click("#processes [data-stop-process]");
  await waitFor(() => chat.$eval("#processes", (el) => el.hidden), "the section to empty after Stop", 60000);
  assert.equal(await chat.evaluate(() => document.body.dataset.running), "true", "the run goes on");
  step("Stop ended the process; the run goes on");

  await chat.click("#stop");
  await waitFor(() => chatText(chat).then((t) => t.includes("── cancelled")), "the cancelled run", 60000);
}
