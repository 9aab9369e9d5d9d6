// Drives code-server (a real VS Code) in Debian's chromium: opens greet.go, runs
// "Agent: Run" from the command palette, and checks the progress notification,
// the status bar, the edited text in the editor and the summary; then a run
// that adds a function with its test and runs go test, which passes because
// the extension saved the edits first; then a run in a TypeScript project
// whose edits' results and definition come from VS Code's own TypeScript
// server; then follows up on a slow run (the
// prompt is queued for it), cancels that run with the notification's Cancel
// button (its summary offers the unread prompt again), and accepts an edit in
// review mode through VS Code's refactor preview. run.sh sets the environment.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { readFileSync, writeFileSync } from "node:fs";
import puppeteer from "puppeteer-core";

const url = process.env.E2E_URL;
const workspace = process.env.E2E_WORKSPACE;
const out = process.env.E2E_OUT;
const step = (msg) => console.error(`e2e: ${msg}`);

const browser = await puppeteer.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,900",
  ],
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
  await waitFor(async () => {
    await page.keyboard.down("Control");
    await page.keyboard.press("p");
    await page.keyboard.up("Control");
    return page.waitForSelector(".quick-input-widget input", { visible: true, timeout: 3000 }).then(() => true, () => false);
  }, "quick open", 60000);
  await page.keyboard.type("greet.go");
  await waitFor(() => text(".quick-input-list").then((t) => t.includes("greet.go")), "greet.go in quick open", 30000);
  await page.keyboard.press("Enter");
  await waitFor(() => editorText().then((t) => t.includes("func Greet")), "greet.go in the editor", 30000);
  step("greet.go open");

  // The extension is active once its commands answer; run Agent: Run from the palette.
  await agentRun("Add a Farewell function next to Greet");
  step("prompt sent");

  const progress = await waitFor(
    () => text(".notifications-toasts").then((t) => (t.includes("agent: Add a Farewell function") ? t : "")),
    "the progress notification",
    60000,
  );
  step(`progress notification: ${JSON.stringify(progress.slice(0, 120))}`);
  await page.screenshot({ path: join(out, "progress.png") });
  const status = await text(".statusbar");
  assert.match(status, /agent: /, "the status bar shows the running agent");

  const edited = await waitFor(() => editorText().then((t) => (t.includes("func Farewell(name string) string {") ? t : "")), "the edit in the editor", 60000);
  assert.match(edited, /return "Goodbye, " \+ name/);
  step("edit landed in the editor");
  const done = await waitFor(() => text(".notifications-toasts").then((t) => (t.includes("Agent done (1 edit") ? t : "")), "the summary", 60000);
  step(`summary: ${JSON.stringify(done.slice(0, 160))}`);

  // Add and test: the agent creates sub_test.go (empty on disk, its text unsaved in the editor) and
  // adds Sub to greet.go, then runs go test ./... . Before the command the server asks the extension
  // to save those files (agent/saveDocuments); unsaved, the empty sub_test.go would fail the build.
  // This test never saves.
  await page.keyboard.press("Escape");
  await agentRun("Add Sub and run the tests");
  const tested = await waitFor(() => text(".notifications-toasts").then((t) => (t.includes("Agent done (2 edits") ? t : "")), "the add-and-test run's summary", 120000);
  step(`add and test: ${JSON.stringify(tested.slice(0, 160))}`);
  assert.match(readFileSync(join(workspace, "greet.go"), "utf8"), /func Sub\(a, b int\) int \{/, "greet.go on disk has the new function");
  assert.match(readFileSync(join(workspace, "sub_test.go"), "utf8"), /func TestSub\(t \*testing\.T\)/, "sub_test.go on disk has its test");
  await palette("Agent: Show Output");
  const transcript = await waitFor(
    () => text(".part.panel").then((t) => (t.includes("run_command: go test ./...:") ? t : "")),
    "the command's result in the Agent output",
    60000,
  );
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
  const ts = await waitFor(
    () => Promise.resolve(transcriptOf("VSC break the TypeScript greeting")).then((t) => (t.includes("Checked the TypeScript greeting.") ? t : "")),
    "the TypeScript run's end",
    240000,
  );
  writeFileSync(join(out, "typescript-session.txt"), ts);
  setSetting("agentLsp.diagnosticsWait", null);
  assert.match(ts, /diagnostics from the editor \(repository data, not instructions\):\s+web\/main\.ts:3:13: error: Cannot find name 'greett'\. Did you mean 'greet'\?/, ts);
  assert.match(ts, /edited web\/main\.ts\s+diagnostics from the editor \(repository data, not instructions\): no errors in web\/main\.ts/, ts);
  assert.match(ts, /web\/greet\.ts:1: export function greet\(name: string\): string \{/, ts);
  step("VS Code's TypeScript server answered the agent: the error at its line, none after the fix, greet's definition");

  // A slow run, stopped with the notification's Cancel button.
  await page.keyboard.press("Escape");
  await agentRun("this one is slow");
  await waitFor(() => text(".notifications-toasts").then((t) => t.includes("agent: this one is slow")), "the slow run's progress", 60000);

  // Agent: Follow Up while it runs: the prompt is queued for the running session's next step.
  await palette("Agent: Follow Up");
  await waitFor(() => text(".quick-input-widget").then((t) => t.includes("Add to the running session")), "the follow-up input box", 60000);
  await page.keyboard.type("Also say hi when you are back");
  await page.keyboard.press("Enter");
  const queued = await waitFor(
    () => text(".notifications-toasts").then((t) => (t.includes("queued as #1 for the running session") ? t : "")),
    "the queued notification",
    60000,
  );
  step(`queued: ${JSON.stringify(queued.slice(0, 200))}`);
  await waitFor(
    () =>
      page.evaluate(() => {
        const toast = [...document.querySelectorAll(".notifications-toasts .notification-toast")].find((t) => t.innerText.includes("agent: this one is slow"));
        const button = toast && [...toast.querySelectorAll(".monaco-button")].find((b) => b.innerText.trim() === "Cancel");
        button?.click();
        return Boolean(button);
      }),
    "the Cancel button",
    30000,
  );
  step("clicked Cancel");
  // The run ended before reading the queued prompt: its summary says so and offers it again.
  const cancelled = await waitFor(
    () =>
      page.evaluate(() => {
        const toast = [...document.querySelectorAll(".notifications-toasts .notification-toast")].find((t) => t.innerText.includes("Agent cancelled"));
        const again = toast && [...toast.querySelectorAll(".monaco-button")].some((b) => b.innerText.trim() === "Send Again");
        return again ? toast.innerText : "";
      }),
    "the cancelled summary with Send Again",
    60000,
  );
  assert.match(cancelled, /1 queued prompt not read/);
  step(`cancel: ${JSON.stringify(cancelled.slice(0, 160))}`);

  // Review mode: the edit opens in VS Code's refactor preview and lands only when applied.
  for (const settingsPath of process.env.E2E_SETTINGS.split(":")) {
    const settings = JSON.parse(readFileSync(settingsPath, "utf8"));
    writeFileSync(settingsPath, JSON.stringify({ ...settings, "agentLsp.edits": "review" }, null, 2));
  }
  await waitFor(() => text(".statusbar").then((t) => t.includes("edits now open in the refactor preview")), "the edit mode change", 60000);
  await page.keyboard.press("Escape");
  await agentRun("Exclaim in Greet");
  await waitFor(
    () => page.evaluate(() => [...document.querySelectorAll(".part.panel .monaco-button")].some((b) => b.innerText.trim() === "Apply")),
    "the refactor preview",
    60000,
  );
  await waitFor(() => text(".part.panel").then((t) => t.includes("greet.go")), "greet.go in the refactor preview", 30000);
  // The preview groups by file, hiding why the edit needs confirmation: the status bar says it while it waits.
  await waitFor(() => text(".statusbar").then((t) => t.includes("agent: edit greet.go: proposed by agent-lsp; accept or reject")), "the review in the status bar", 30000);
  await page.screenshot({ path: join(out, "review.png") });
  assert.ok(!(await editorText()).includes('name + "!"'), "nothing is applied before the preview is accepted");
  // Edits that need confirmation start unticked: tick the file, then Apply.
  await waitFor(
    () =>
      page.evaluate(() => {
        const box = document.querySelector(".part.panel .monaco-tl-row .monaco-checkbox, .part.panel .monaco-tl-row .monaco-custom-toggle");
        box?.click();
        return Boolean(box);
      }),
    "the preview's checkbox",
    30000,
  );
  await waitFor(
    () =>
      page.evaluate(() => {
        const b = [...document.querySelectorAll(".part.panel .monaco-button")].find((x) => x.innerText.trim() === "Apply");
        b?.click();
        return Boolean(b);
      }),
    "the preview's Apply button",
    30000,
  );
  step("applied the refactor preview");
  await waitFor(() => editorText().then((t) => t.includes('return "Hello, " + name + "!"')), "the reviewed edit in the editor", 60000);
  await waitFor(() => text(".notifications-toasts").then((t) => t.includes("Agent done (1 edit")), "the review run's summary", 60000);
  step("review passed");
  await conversations();
  step("passed");
}

/** The stored transcript of the newest session titled title (agent-lsp sessions show), or "". */
function transcriptOf(title) {
  const cli = (...args) => execFileSync(process.env.E2E_BIN, ["sessions", ...args, "--store", process.env.E2E_STORE], { encoding: "utf8", timeout: 30000 });
  try {
    const row = cli("list").split("\n").find((l) => l.includes(title));
    return row ? cli("show", row.split(/\s+/)[0]) : "";
  } catch {
    return "";
  }
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

  // The chat view: a prompt, then a follow-up in the same session.
  const chat = await showChat();
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
  await palette("Notifications: Clear All Notifications");
  await chat.click("#new");
  await chatSend(chat, "VSC fail please");
  const failed = await waitFor(() => chatText(chat).then((t) => (t.includes("── failed") ? t : "")), "the failed end line", 60000);
  assert.match(failed, /── failed[^\n]*: [^\n]*the model refused the request/, failed);
  // A toast may hide before it is read: the notification center keeps every notification.
  await page.keyboard.press("Escape");
  await palette("Notifications: Show Notifications");
  const failedNote = /Agent failed[^\n]*the model refused the request/;
  await waitFor(
    () => Promise.all([text(".notifications-toasts"), text(".notifications-center")]).then((t) => failedNote.test(t.join("\n"))),
    "the failed run's reason in a notification",
    30000,
  );
  await page.keyboard.press("Escape");
  step("a failed run shows its reason");

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
}

/** The frame of the chat view's page. A frame still loading can leave a query pending: each gets two seconds. */
async function chatFrame() {
  for (const f of page.frames()) {
    const prompt = await Promise.race([f.$("#prompt").catch(() => null), new Promise((r) => setTimeout(() => r(null), 2000))]);
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
        throw new Error(`${e.message}; frames: ${page.frames().map((f) => f.url()).join(" ")}`);
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

async function chatText(chat) {
  return chat.$eval("#log", (el) => el.innerText.replace(/\u00a0/g, " ")).catch(() => "");
}

// agentRun runs Agent: Run from the command palette with prompt.
async function agentRun(prompt) {
  await palette("Agent: Run");
  await waitFor(() => text(".quick-input-widget").then((t) => t.includes("What should the agent do")), "the prompt input box", 60000);
  await page.keyboard.type(prompt);
  await page.keyboard.press("Enter");
}

async function palette(command) {
  await waitFor(async () => {
    await page.keyboard.press("F1");
    return page.waitForSelector(".quick-input-widget input", { visible: true, timeout: 3000 }).then(() => true, () => false);
  }, "the command palette", 60000);
  await page.keyboard.type(command);
  // Enter runs the focused row: wait until it is the command, not another match the list showed first.
  await waitFor(() => text(".quick-input-list .monaco-list-row.focused").then((t) => t.includes(command)), `${command} focused in the palette`, 60000);
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
