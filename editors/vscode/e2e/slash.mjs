// The chat's prompt box completes slash commands (src/slash.ts): "/" lists
// agent.commands (the built-ins and the project's .agents/commands/fix.md,
// which run.sh writes), typing narrows the list, Tab takes the highlighted
// command; the sent "/fix the parser" is expanded by the server, and the
// built-in "/help fix" is answered in the chat without a run.
import assert from "node:assert/strict";
import { join } from "node:path";

export async function slashCompletion({ page, chat, chatText, chatSend, waitFor, step, out }) {
  const list = () => chat.$eval("#slash", (el) => (el.hidden ? "" : el.innerText.replace(/\u00a0/g, " "))).catch(() => "");
  await chat.click("#new");
  await chat.click("#prompt");
  await chat.type("#prompt", "/");
  const all = await waitFor(list, "the slash commands' list", 30000);
  assert.match(all, /\/help \[command\] List the slash commands/, all);
  assert.match(all, /\/fix <what is wrong> Fix what is wrong \(project\)/, all);
  await chat.type("#prompt", "fi");
  await waitFor(() => list().then((t) => t.includes("/fix") && !t.includes("/help")), "the list narrowed to /fix", 10000);
  await page.screenshot({ path: join(out, "slash.png") });
  const input = await chat.$("#prompt");
  await input.press("Tab");
  assert.equal(await chat.$eval("#prompt", (el) => el.value), "/fix ", "Tab takes the command");
  assert.equal(await list(), "", "the list closes once a command is taken");
  await chat.type("#prompt", "the parser");
  await chat.click("#send");
  await waitFor(() => chatText(chat).then((t) => t.includes("Fixed by the slash command.")), "the reply to the expanded /fix", 60000);
  step("/ completes a slash command in the chat; the server expands it");

  await chat.click("#new");
  await chatSend(chat, "/help fix");
  await waitFor(() => chatText(chat).then((t) => t.includes("source: project (.agents/commands/fix.md)")), "the built-in's answer in the chat", 30000);
  step("/help answers in the chat without a run");
}
