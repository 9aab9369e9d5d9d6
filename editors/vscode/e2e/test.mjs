// Drives code-server (a real VS Code) in Debian's chromium: opens greet.go, runs
// "Agent: Run" from the command palette, and checks that the run opens in the
// chat (its prompt, its edit row as a diff with one element per line, its end
// line), the status bar and the edited text in the editor; then a run that
// adds a function with its test and runs go test, which passes because the
// extension saved the edits first; then a run in a TypeScript project whose
// edits' results and definition come from VS Code's own TypeScript server;
// then follows up on a slow run (the prompt is queued for it), stops that run
// from the chat (its end line offers the unread prompt again), and reviews
// edits in review mode: Accept on one hunk and Reject on another, a proposal
// edited before it is accepted, and Accept All with a protected file among
// the edits (rejected from the chat); then conversations in the chat, a
// Markdown table among them, an image pasted into the chat's box, a plan run
// with a token budget and its "Run this plan", a background process
// stopped from the chat (e2e/plan.mjs), and a rewind from the chat
// (e2e/rewind.mjs).
// Waits are generous: the host may be loaded.
// run.sh sets the environment.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import puppeteer from "puppeteer-core";
import { slashCompletion } from "./slash.mjs";
import { pastedImage } from "./paste.mjs";
import { backgroundProcesses, runThisPlan } from "./plan.mjs";
import { rewindFromChat } from "./rewind.mjs";

const url = process.env.E2E_URL;
const workspace = process.env.E2E_WORKSPACE;
const out = process.env.E2E_OUT;
const step = (msg) => console.error(`e2e: ${msg}`);

const browser = await puppeteer.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,900"],
  defaultViewport: { width: 1400, height: 900 },
});
const page = await browser.newPage();
let failed = false;
try {
  await run(page);
} catch (e) {
  failed = true;
  console.error(e);
  // What the agent did, for the failure's reader.
  await page.keyboard.press("Escape").catch(() => {});
  await palette("Agent: Show Output").catch(() => {});
  await new Promise((r) => setTimeout(r, 1000));
  writeFileSync(join(out, "failure-output.txt"), await text(".part.panel"));
} finally {
  await page.screenshot({ path: join(out, failed ? "failure.png" : "screenshot.png") }).catch(() => {});
  await browser.close();
}
process.exit(failed ? 1 : 0);

async function run(page) {
  // code-server may take a moment to listen.
  for (let i = 0; ; i++) {
    try {
      await page.goto(url, { waitUntil: "domcontentloaded", timeout: 30000 });
      break;
    } catch (e) {
      if (i > 60) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  await page.waitForSelector(".monaco-workbench", { timeout: 120000 });
  step("workbench loaded");
  await page.waitForSelector(".explorer-folders-view, .explorer-viewlet", { timeout: 60000 });

  // Open greet.go with Quick Open.
  await quickOpen("greet.go");
  await waitFor(() => editorText().then((t) => t.includes("func Greet")), "greet.go in the editor", 30000);
  step("greet.go open");

  // The extension is active once its commands answer; run Agent: Run from the palette.
  await agentRun("Add a Farewell function next to Greet");
  step("prompt sent");

  // Agent: Run opens its run in the chat: no progress toast.
  const chat = await waitFor(() => chatFrame(), "the chat view, opened by Agent: Run", 120000);
  await waitFor(() => chatText(chat).then((t) => t.includes("Add a Farewell function next to Greet")), "the prompt in the chat", 60000);
  await page.screenshot({ path: join(out, "progress.png") });

  const edited = await waitFor(() => editorText().then((t) => (t.includes("func Farewell(name string) string {") ? t : "")), "the edit in the editor", 120000);
  assert.match(edited, /return "Goodbye, " \+ name/);
  step("edit landed in the editor");
  const done = await chatEnd(chat, /── done · 1 edit\b/, "the run's end line in the chat");
  // agentLsp.limits.maxTokens is 50,000 (run.sh): the run's line says what its budget leaves.
  assert.match(done, /[\d.]+k of 50\.0k tokens left/, done);
  step(`end line: ${JSON.stringify(done.match(/── done[^\n]*/)?.[0])}`);
  // The edit row is a diff, one element per line, the added lines marked.
  const diff = await chat.evaluate(() => [...document.querySelectorAll(".tool .diff .ln")].map((l) => `${l.className}|${l.textContent}`));
  assert.ok(
    diff.some((l) => l === "ln add|+func Farewell(name string) string {"),
    `the added line as its own element: ${JSON.stringify(diff)}`,
  );
  assert.ok(
    diff.some((l) => l.startsWith("ln ctx| ")),
    `context lines unmarked: ${JSON.stringify(diff)}`,
  );
  assert.doesNotMatch(await text(".notifications-toasts"), /Agent done/, "no summary toast while the chat shows the run");

  // Add and test: the agent creates sub_test.go (empty on disk, its text unsaved in the editor) and
  // adds Sub to greet.go, then runs go test ./... . Before the command the server asks the extension
  // to save those files (agent/saveDocuments); unsaved, the empty sub_test.go would fail the build.
  // This test never saves.
  await page.keyboard.press("Escape");
  await agentRun("Add Sub and run the tests");
  const tested = await chatEnd(chat, /── done · 2 edits\b/, "the add-and-test run's end line");
  // The command's row: the command, its exit code (not a bare mark) and its output's tail.
  assert.match(tested, /\$ go test \.\/\.\.\.[^\n]*exit 0/, tested);
  step(`add and test: ${JSON.stringify(tested.match(/── done[^\n]*/)?.[0])}`);
  assert.match(readFileSync(join(workspace, "greet.go"), "utf8"), /func Sub\(a, b int\) int \{/, "greet.go on disk has the new function");
  assert.match(readFileSync(join(workspace, "sub_test.go"), "utf8"), /func TestSub\(t \*testing\.T\)/, "sub_test.go on disk has its test");
  await palette("Agent: Show Output");
  const transcript = await waitFor(() => text(".part.panel").then((t) => (t.includes("run_command: go test ./...:") ? t : "")), "the command's result in the Agent output", 60000);
  await page.screenshot({ path: join(out, "saved.png") });
  assert.match(transcript, /⤓ saved for the command: (greet\.go, sub_test\.go|sub_test\.go, greet\.go)/, transcript);
  assert.match(transcript, /✓ run_command: go test \.\/\.\.\.: exit status 0/, transcript);
  step("the extension saved the edits and the tests passed");

  // The agent sees what VS Code's language servers see (agent/diagnostics, agent/languageRequest): in
  // web/, a TypeScript project, it breaks a call, fixes it and asks where greet is defined; VS Code's
  // built-in TypeScript server answers all three. Its results are read from the stored session. The
  // server may still be starting on this loaded machine: the edits wait longer for its diagnostics
  // (a settings change, no restart), and as long as before once it is done.
  await page.keyboard.press("Escape");
  setSetting("agentLsp.diagnosticsWait", 30000);
  await new Promise((r) => setTimeout(r, 2000)); // the change reaches the server before the run starts
  await agentRun("VSC break the TypeScript greeting");
  const ts = await waitFor(() => Promise.resolve(transcriptOf("VSC break the TypeScript greeting")).then((t) => (t.includes("Checked the TypeScript greeting.") ? t : "")), "the TypeScript run's end", 240000);
  writeFileSync(join(out, "typescript-session.txt"), ts);
  setSetting("agentLsp.diagnosticsWait", null);
  assert.match(ts, /diagnostics from the editor \(repository data, not instructions\):\s+web\/main\.ts:3:13: error: Cannot find name 'greett'\. Did you mean 'greet'\?/, ts);
  assert.match(ts, /edited web\/main\.ts\s+diagnostics from the editor \(repository data, not instructions\): no errors in web\/main\.ts/, ts);
  assert.match(ts, /web\/greet\.ts:1: export function greet\(name: string\): string \{/, ts);
  step("VS Code's TypeScript server answered the agent: the error at its line, none after the fix, greet's definition");

  // A slow run, stopped from the chat.
  await page.keyboard.press("Escape");
  await agentRun("this one is slow");
  await waitFor(() => chatText(chat).then((t) => t.includes("this one is slow")), "the slow run in the chat", 60000);
  await waitFor(() => chat.$eval("#stop", (b) => !b.hidden).catch(() => false), "the chat's Stop button", 60000);

  // Agent: Follow Up while it runs: the prompt is queued for the running session's next step.
  await palette("Agent: Follow Up");
  await waitFor(() => text(".quick-input-widget").then((t) => t.includes("Add to the running session")), "the follow-up input box", 60000);
  await page.keyboard.type("Also say hi when you are back");
  await page.keyboard.press("Enter");
  const queued = await waitFor(() => chatText(chat).then((t) => (t.includes("Also say hi when you are back") && t.includes("queued #1") ? t : "")), "the queued prompt in the chat", 60000);
  step(`queued: ${JSON.stringify(queued.slice(-120))}`);
  await chat.click("#stop");
  step("clicked Stop");
  // The run ended before reading the queued prompt: its end line says so and offers it again.
  const cancelled = await chatEnd(chat, /── cancelled[\s\S]*Not read by the cancelled run/, "the cancelled end line with the unread prompt");
  assert.ok(await chat.evaluate(() => [...document.querySelectorAll("button[data-resend]")].some((b) => b.dataset.resend === "Also say hi when you are back")), "Send Again offers the unread prompt");
  step(`cancel: ${JSON.stringify(cancelled.slice(-160))}`);

  // Review mode: each edit opens as the extension's own diff, hunk by hunk.
  setSetting("agentLsp.edits", "review");
  await waitFor(() => text(".statusbar").then((t) => t.includes("edits now open for your review first")), "the edit mode change", 60000);
  await page.keyboard.press("Escape");
  await reviews();
  // Edits apply directly again: the chat's runs below do not stop at a review.
  setSetting("agentLsp.edits", "apply");
  await waitFor(() => text(".statusbar").then((t) => t.includes("edits now apply directly")), "the edit mode change back", 60000);
  await conversations();
  step("passed");
}

/** The stored transcript of the newest session titled title (agent-lsp sessions show), or "". */
function transcriptOf(title) {
  const cli = (...args) => execFileSync(process.env.E2E_BIN, ["sessions", ...args, "--store", process.env.E2E_STORE], { encoding: "utf8", timeout: 30000 });
  try {
    const row = cli("list")
      .split("\n")
      .find((l) => l.includes(title));
    return row ? cli("show", row.split(/\s+/)[0]) : "";
  } catch {
    return "";
  }
}

/**
 * Review mode: an edit of two separate hunks, one accepted and one rejected
 * with their CodeLens; a proposal edited before it is accepted (with the key
 * of Accept Change); and Accept All over a step's three edits, one of a
 * protected file, which stays for its own confirmation and is rejected from
 * the chat. What lands is checked in the editor, what the model was told in
 * the requests it received.
 */
async function reviews() {
  const file = join(workspace, "review.txt");
  writeFileSync(file, "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n");
  await agentRun("VSC review two hunks");
  // The diff of the proposal, with Accept and Reject over each of its two hunks (lines 2 and 7).
  await waitFor(() => lenses("Accept").then((l) => l.length === 2), "Accept over each of the two hunks", 60000);
  await page.screenshot({ path: join(out, "review.png") });
  assert.equal(readFileSync(file, "utf8"), "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n", "nothing lands before the review is decided");
  const status = await text(".statusbar");
  assert.match(status, /Review review\.txt/, status);
  assert.match(status, /Accept All/, status);
  await clickLens("Accept", 0); // line 2: TWO
  // The editor asks for the CodeLens again a moment after they change: slow on a loaded host.
  await waitFor(() => lenses("Accepted").then((l) => l.length === 1), "the first hunk accepted", 120000);
  await clickLens("Reject", 1); // line 7: SEVEN
  step("accepted the first hunk, rejected the second");
  const told = await toolResult("call_two_hunks");
  assert.match(told, /the edit of review\.txt was applied with changes by the user at lines 7-7/, told);
  await chatEnd(await showChat(), /── done · 1 edit\b/, "the two-hunk run's end line");
  assert.equal(await openedText("review.txt"), "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\n", "the file has exactly the accepted hunk");
  step(`the model was told: ${JSON.stringify(told.slice(0, 120))}`);

  // The proposal edited before it is accepted: the edited text lands.
  await page.keyboard.press("Escape");
  await agentRun("VSC review edit the proposal");
  await waitFor(() => lenses("Accept").then((l) => l.length === 1), "Accept over the hunk", 60000);
  const line = await waitFor(
    () =>
      page.evaluate(() => {
        const l = [...document.querySelectorAll(".editor.modified .view-line")].find((x) => x.innerText.trim() === "FIVE");
        if (!l) return null;
        const r = l.getBoundingClientRect();
        return { x: r.left + 5, y: r.top + r.height / 2 };
      }),
    "the proposal's line FIVE",
    30000,
  );
  await page.mouse.click(line.x, line.y);
  await page.keyboard.press("End");
  await page.keyboard.type(" edited");
  await waitFor(() => page.evaluate(() => [...document.querySelectorAll(".editor.modified .view-line")].some((x) => x.innerText.replace(/\u00a0/g, " ").trim() === "FIVE edited")), "the typed text in the proposal", 30000);
  // Accept Change (Ctrl+Alt+Y) on the hunk under the cursor: the last hunk decided answers the edit.
  await page.keyboard.down("Control");
  await page.keyboard.down("Alt");
  await page.keyboard.press("y");
  await page.keyboard.up("Alt");
  await page.keyboard.up("Control");
  const edited = await toolResult("call_proposal");
  assert.match(edited, /the edit of review\.txt was applied with changes by the user at lines 5-5/, edited);
  assert.equal(await openedText("review.txt"), "one\nTWO\nthree\nfour\nFIVE edited\nsix\nseven\neight\n", "the edited proposal landed");
  step("the edited proposal landed");

  // Accept All over a step's three edits; the protected AGENTS.md keeps its own confirmation.
  writeFileSync(join(workspace, "all-a.txt"), "alpha\n");
  writeFileSync(join(workspace, "all-b.txt"), "beta\n");
  writeFileSync(join(workspace, "AGENTS.md"), "# Agents\n");
  await page.keyboard.press("Escape");
  const chat = await showChat();
  // The proposal's run ends first (its review's diff closes then, and with it a quick input).
  await chatEnd(chat, /── done · 1 edit\b/, "the proposal run's end line");
  await page.keyboard.press("Escape");
  await agentRun("VSC review accept all");
  await waitFor(() => text(".statusbar").then((t) => t.includes("Accept All")), "Accept All in the status bar", 60000);
  const acceptAll = await waitFor(
    () =>
      page.evaluate(() => {
        const item = [...document.querySelectorAll(".statusbar-item")].find((i) => i.innerText.trim() === "Accept All");
        const r = item?.getBoundingClientRect();
        return r ? { x: r.left + r.width / 2, y: r.top + r.height / 2 } : null;
      }),
    "the status bar's Accept All",
    30000,
  );
  await page.mouse.click(acceptAll.x, acceptAll.y);
  step("clicked Accept All");
  await waitFor(() => text(".statusbar").then((t) => t.includes("Review AGENTS.md")), "the protected file's own review", 60000);
  const card = await waitFor(() => chatText(chat).then((t) => (t.includes("+# Agents (changed by the agent)") ? t : "")), "the protected edit's diff in the chat", 30000);
  assert.match(card, /protected file/, card);
  assert.match(card, /-# Agents\n/, card);
  assert.equal(readFileSync(join(workspace, "AGENTS.md"), "utf8"), "# Agents\n", "Accept All did not accept the protected file");
  await page.screenshot({ path: join(out, "review-chat.png") });
  await chat.evaluate(() => {
    const cards = [...document.querySelectorAll(".review")].filter((c) => c.innerText.includes("AGENTS.md"));
    [...cards.at(-1).querySelectorAll("button")].find((b) => b.innerText.trim() === "Reject Edit").click();
  });
  step("rejected the protected edit in the chat");
  const results = await Promise.all(["call_all_a", "call_all_b", "call_all_agents"].map(toolResult));
  // Each result's first line is the edit's; the editor's diagnostics may follow it.
  assert.deepEqual(
    results.slice(0, 2).map((r) => r.split("\n")[0]),
    ["edited all-a.txt", "edited all-b.txt"],
    "Accept All applied the step's other edits",
  );
  assert.match(results[2], /did not apply the edit of AGENTS\.md \(rejected by the user in review\)/, results[2]);
  await chatEnd(chat, /── done · 2 edits\b/, "the accept-all run's end line");
  assert.equal(await openedText("all-a.txt"), "ALPHA\n");
  assert.equal(await openedText("all-b.txt"), "BETA\n");
  step("Accept All applied every edit but the protected one");
}

/** The CodeLens of the editors whose text is title ("$(check) Accept" shows as "Accept"; one without a command is a span), top to bottom. */
async function lenses(title) {
  return page.evaluate((title) => {
    return [...document.querySelectorAll(".codelens-decoration a, .codelens-decoration > span")]
      .filter((a) => a.innerText.replace(/\u00a0/g, " ").trim() === title)
      .map((a) => a.getBoundingClientRect().top)
      .sort((x, y) => x - y);
  }, title);
}

/** Clicks the i-th CodeLens (top to bottom) whose text is title, with the mouse (the editor acts on the mouse-down, not on a click event). */
async function clickLens(title, i) {
  const at = await waitFor(
    () =>
      page.evaluate(
        (title, i) => {
          const all = [...document.querySelectorAll(".codelens-decoration a")].filter((a) => a.innerText.replace(/\u00a0/g, " ").trim() === title);
          all.sort((x, y) => x.getBoundingClientRect().top - y.getBoundingClientRect().top);
          const r = all[i]?.getBoundingClientRect();
          return r ? { x: r.left + r.width / 2, y: r.top + r.height / 2 } : null;
        },
        title,
        i,
      ),
    `CodeLens ${title} #${i + 1}`,
    120000,
  );
  await page.mouse.click(at.x, at.y);
}

/** The content of the tool result the model received for callId (the scripted model records its requests). */
async function toolResult(callId) {
  return waitFor(
    () => {
      let lines = [];
      try {
        lines = readFileSync(process.env.E2E_REQUESTS, "utf8").trim().split("\n").filter(Boolean);
      } catch {
        return "";
      }
      for (const l of lines) {
        const m = JSON.parse(l).messages.find((m) => m.role === "tool" && m.tool_call_id === callId);
        if (m) return m.content;
      }
      return "";
    },
    `the model's request with the result of ${callId}`,
    120000,
  );
}

/** The text of name in the editor, opened with Quick Open (edits land unsaved: the disk may not have them). */
async function openedText(name) {
  await quickOpen(name);
  await waitFor(() => page.title().then((t) => t.includes(name)), `${name} in the editor (the window's title)`, 30000);
  await new Promise((r) => setTimeout(r, 500));
  return editorText();
}

// quickOpen opens the file name with Quick Open (Ctrl+P). Typing is tried again when the list has not
// shown the file after a while: a panel that takes the focus as the window loads can take the keys.
async function quickOpen(name) {
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press("Escape");
    await waitFor(
      async () => {
        await page.keyboard.down("Control");
        await page.keyboard.press("p");
        await page.keyboard.up("Control");
        return page.waitForSelector(".quick-input-widget input", { visible: true, timeout: 3000 }).then(
          () => true,
          () => false,
        );
      },
      "quick open",
      60000,
    );
    await page.keyboard.type(name);
    try {
      await waitFor(() => text(".quick-input-list .monaco-list-row.focused").then((t) => t.includes(name)), `${name} in quick open`, 30000);
      break;
    } catch (e) {
      if (attempt === 3) throw e;
      step(`quick open did not list ${name}: again`);
    }
  }
  await page.keyboard.press("Enter");
}

/** The number of times the server was started (run.sh's wrapper logs each start). */
function starts() {
  try {
    return readFileSync(process.env.E2E_STARTS, "utf8").trim().split("\n").filter(Boolean).length;
  } catch {
    return 0;
  }
}

/** Sets key to value in the user and machine settings files, as the user editing settings.json. */
// setSetting writes a setting into the User and Machine settings files. code-server's window is a
// remote one and notices a change of either file only for window- and machine-scoped settings: an
// application-scoped one (allow, limits.*, prices) is read at the start only, so run.sh sets those.
function setSetting(key, value) {
  for (const settingsPath of process.env.E2E_SETTINGS.split(":")) {
    const settings = JSON.parse(readFileSync(settingsPath, "utf8"));
    writeFileSync(settingsPath, JSON.stringify({ ...settings, [key]: value }, null, 2));
  }
}

/**
 * Conversations: the model picker, the chat view (a follow-up in the same
 * session, Stop, a failed run's reason, the end line with tokens and the
 * model), and a settings change that reaches the server without a restart.
 */
async function conversations() {
  // The edit mode change above went to the server without a restart: it started once.
  assert.equal(starts(), 1, "settings changes did not restart the server");

  // Agent: Select Model: the endpoint's models in a quick pick; the status bar shows the pick.
  await page.keyboard.press("Escape");
  await palette("Agent: Select Model");
  await waitFor(() => text(".quick-input-list").then((t) => t.includes("scripted-large")), "the endpoint's models in the quick pick", 60000);
  await page.keyboard.type("scripted-large");
  await page.keyboard.press("Enter");
  await waitFor(() => text(".statusbar").then((t) => t.includes("scripted-large")), "the chosen model in the status bar", 30000);
  step("picked scripted-large");

  // The chat view: a prompt, then a follow-up in the same session. The chat shows the last Agent: Run's
  // session: a new chat first.
  const chat = await showChat();
  await chat.click("#new");
  await waitFor(() => chat.evaluate(() => document.body.dataset.session === ""), "the new chat", 60000);
  await chatSend(chat, "VSC chat about Greet: what does it do?");
  await waitFor(() => chatText(chat).then((t) => t.includes("says hello to a name") && /── done[^\n]*scripted-large/.test(t)), "the chat's first reply and end line", 60000);
  const session = await chat.evaluate(() => document.body.dataset.session);
  assert.match(session, /^s-/, "the chat follows the session its run started");
  const first = await chatText(chat);
  assert.match(first, /read_file greet\.go/, "the tool call shows");
  assert.match(first, /── done · 0 edits · \d+ steps · [\d.]+k tokens · scripted-large/, first);
  await chatSend(chat, "And what does it return?");
  await waitFor(() => chatText(chat).then((t) => t.includes("Still the same session") && (t.match(/── done/g) ?? []).length === 2), "the follow-up's reply", 60000);
  assert.equal(await chat.evaluate(() => document.body.dataset.session), session, "the follow-up stayed in the session");
  step(`chat: a follow-up in session ${session}`);
  await page.screenshot({ path: join(out, "chat.png") });

  // Stop from the chat.
  await chat.click("#new");
  await chatSend(chat, "VSC stop me now");
  await waitFor(() => chat.$eval("#stop", (b) => !b.hidden).catch(() => false), "the Stop button", 60000);
  await chat.click("#stop");
  await waitFor(() => chatText(chat).then((t) => t.includes("── cancelled")), "the cancelled end line", 60000);
  assert.ok(await chat.$eval("#stop", (b) => b.hidden), "Stop hides once the run ended");
  step("stopped from the chat");

  // A failed run shows its reason, in the chat and in the notification (the newest toast once the others are cleared).
  await page.keyboard.press("Escape");
  await chat.click("#new");
  await chatSend(chat, "VSC fail please");
  const failed = await waitFor(() => chatText(chat).then((t) => (t.includes("── failed") ? t : "")), "the failed end line", 60000);
  assert.match(failed, /── failed[^\n]*: [^\n]*the model refused the request/, failed);
  step("a failed run shows its reason");

  // A Markdown table and a task list render as such.
  await chat.click("#new");
  await chatSend(chat, "VSC chat table please");
  const table = await waitFor(
    () => chat.evaluate(() => [...document.querySelectorAll("#log table tr")].map((r) => [...r.children].map((c) => `${c.tagName}:${c.textContent}`).join(","))).then((rows) => (rows.length === 3 ? rows : null)),
    "the reply's table",
    60000,
  );
  assert.deepEqual(table, ["TH:Function,TH:Returns", "TD:Greet,TD:a greeting", "TD:Farewell,TD:a goodbye"]);
  const tasks = await chat.evaluate(() => [...document.querySelectorAll("#log li input[type=checkbox]")].map((c) => c.checked));
  assert.deepEqual(tasks, [true, false], "the task list's boxes");
  assert.doesNotMatch(await chatText(chat), /\| ---/, "no raw pipes");
  await page.screenshot({ path: join(out, "chat-table.png") });
  step("a table and a task list render");

  await slashCompletion({ page, chat, chatText, chatSend, waitFor, step, out });
  await pastedImage({ page, chat, chatText, chatSend, waitFor, step, out });
  // Before the plan and processes steps: the processes step's run goes on (its model waits), and
  // the rewind needs no run of its session going.
  await rewindFromChat({ page, chat, chatText, chatSend, chatEnd, waitFor, step, out, workspace, text, openedText, showChat });
  await runThisPlan({ page, chat, chatText, chatSend, waitFor, step, out, palette, text });
  await backgroundProcesses({ page, chat, chatText, chatSend, waitFor, step, out, palette, text });

  // A settings change goes to the running server: the next run uses it, the server is not restarted.
  setSetting("agentLsp.contextTokens", 16384);
  await new Promise((r) => setTimeout(r, 2000)); // the settings file is read when it changes
  await chat.click("#new");
  await chatSend(chat, "VSC settings live, please");
  await waitFor(() => chatText(chat).then((t) => t.includes("── done")), "the run after the settings change", 60000);
  await page.keyboard.press("Escape");
  await palette("Agent: Show Output");
  await waitFor(() => text(".part.panel").then((t) => t.includes("context 16384 tokens")), "the new context size in the run's header", 60000);
  assert.equal(starts(), 1, "the settings change did not restart the server");
  step("a settings change applied without a restart");
  await noKey();
}

/**
 * No API key for OpenAI's endpoint: the empty chat says so with Set API Key,
 * and a prompt shows "Set API Key" within 2 s while no request leaves (the
 * server's requests would all go through a proxy that is a trap of the test).
 */
async function noKey() {
  let conns = 0;
  const trap = createServer((s) => {
    conns++;
    s.destroy();
  });
  await new Promise((r) => trap.listen(0, "127.0.0.1", r));
  writeFileSync(process.env.E2E_NO_KEY, `http://127.0.0.1:${trap.address().port}`);
  setSetting("agentLsp.baseURL", "https://api.openai.com/v1");
  setSetting("agentLsp.model", "gpt-4o-mini");
  await new Promise((r) => setTimeout(r, 2000)); // the settings file is read when it changes
  await page.keyboard.press("Escape");
  const before = starts();
  await palette("Agent: Restart Server");
  await waitFor(() => starts() > before, "the server to restart without a key", 60000);
  const chat = await showChat();
  await chat.click("#new");
  const empty = await waitFor(() => chatText(chat).then((t) => (t.includes("this endpoint needs one") ? t : "")), "the empty chat's endpoint line", 30000);
  assert.match(empty, /Model gpt-4o-mini at https:\/\/api\.openai\.com\/v1 · no API key \(OPENAI_API_KEY\): this endpoint needs one\. Set API Key/, empty);
  await page.keyboard.press("Escape");
  await palette("Notifications: Clear All Notifications");
  await chatSend(chat, "VSC no key, please");
  const sent = Date.now();
  await waitFor(() => page.evaluate(() => [...document.querySelectorAll(".notifications-toasts .monaco-button")].some((b) => b.innerText.trim() === "Set API Key")), "Set API Key in a notification", 10000);
  const took = Date.now() - sent;
  await page.screenshot({ path: join(out, "no-key.png") });
  const toasts = await text(".notifications-toasts");
  assert.equal((toasts.match(/no API key/g) ?? []).length, 1, `the warning shows once: ${toasts}`);
  assert.ok(!/\bResume\b/.test(toasts), `no Resume: ${toasts}`);
  assert.equal(conns, 0, "a request left the server");
  trap.close();
  step(`no key: Set API Key after ${took} ms, no request`);
}

/** The frame of the chat view's page. A frame still loading can leave a query pending: each gets five seconds (a loaded host is slow to answer). */
async function chatFrame() {
  for (const f of page.frames()) {
    const prompt = await Promise.race([f.$("#prompt").catch(() => null), new Promise((r) => setTimeout(() => r(null), 5000))]);
    if (prompt) return f;
  }
  return undefined;
}

// showChat runs Agent: Show Chat and returns the chat view's frame. The command is run again
// if the view has not shown after a while (a palette Enter can land while the palette closes);
// a view that never shows fails with the frames that were there.
async function showChat() {
  for (let attempt = 1; ; attempt++) {
    await palette("Agent: Show Chat");
    try {
      return await waitFor(() => chatFrame(), "the chat view", 30000);
    } catch (e) {
      await page.screenshot({ path: join(out, `chat-missing-${attempt}.png`) }).catch(() => {});
      if (attempt === 2) {
        throw new Error(
          `${e.message}; frames: ${page
            .frames()
            .map((f) => f.url())
            .join(" ")}`,
        );
      }
      step("the chat view did not show: Agent: Show Chat again");
      await page.keyboard.press("Escape");
    }
  }
}

async function chatSend(chat, prompt) {
  await chat.click("#prompt");
  await chat.type("#prompt", prompt);
  await chat.click("#send");
}

/** Waits for the chat's text to match re (a run's end line), and returns the text. */
async function chatEnd(chat, re, what) {
  return waitFor(() => chatText(chat).then((t) => (re.test(t) ? t : "")), what, 120000);
}

async function chatText(chat) {
  return chat.$eval("#log", (el) => el.innerText.replace(/\u00a0/g, " ")).catch(() => "");
}

// agentRun runs Agent: Run from the command palette with prompt.
// The box closes when the focus moves (a review's diff closing at the end of the run before,
// a notification): it is opened again, and Enter goes only once the box holds the whole prompt.
async function agentRun(prompt) {
  for (let attempt = 1; ; attempt++) {
    await palette("Agent: Run");
    try {
      await waitFor(() => text(".quick-input-widget").then((t) => t.includes("What should the agent do")), "the prompt input box", 20000);
      await page.keyboard.type(prompt);
      await waitFor(() => page.evaluate((p) => [...document.querySelectorAll(".quick-input-widget input")].some((el) => el.value === p), prompt), `the prompt ${JSON.stringify(prompt)} in the box`, 5000);
      break;
    } catch (e) {
      if (attempt === 3) throw e;
      step(`Agent: Run's box: ${e.message}: again`);
    }
  }
  await page.keyboard.press("Enter");
}

// palette runs command from the command palette. A quick input left open (a prompt box, a
// picker) is closed first; typing is tried again when the list has not focused the command.
async function palette(command) {
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press("Escape");
    await waitFor(
      async () => {
        await page.keyboard.press("F1");
        return page.waitForSelector(".quick-input-widget input", { visible: true, timeout: 3000 }).then(
          () => true,
          () => false,
        );
      },
      "the command palette",
      60000,
    );
    await page.keyboard.type(command);
    // Enter runs the focused row: wait until it is the command, not another match the list showed first.
    try {
      await waitFor(() => text(".quick-input-list .monaco-list-row.focused").then((t) => t.includes(command)), `${command} focused in the palette`, 30000);
      break;
    } catch (e) {
      if (attempt === 3) throw e;
      step(`the palette did not focus ${command}: again`);
    }
  }
  await page.keyboard.press("Enter");
}

async function text(selector) {
  return page.$eval(selector, (el) => el.innerText.replace(/\u00a0/g, " ")).catch(() => "");
}

async function editorText() {
  return page
    .$eval(".editor-instance .view-lines, .monaco-editor .view-lines", (el) =>
      [...el.querySelectorAll(".view-line")]
        .map((l) => ({ top: parseFloat(l.style.top) || 0, text: l.innerText }))
        .sort((a, b) => a.top - b.top)
        .map((l) => l.text)
        .join("\n")
        .replace(/\u00a0/g, " "),
    )
    .catch(() => "");
}

async function waitFor(fn, what, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
