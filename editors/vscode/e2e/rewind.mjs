// Rewind from the chat (src/rewind.ts): two prompts of a new chat each edit
// rewind.txt (the scripted model's "VSC rewind one" conversation); the second
// prompt's Fork from here shows a new session with the first exchange; back
// in the first session, the second prompt's Rewind… opens the scope's quick
// pick, which lists the file; "Conversation and files" puts rewind.txt back
// as it was before the second prompt and the chat, read again, shows one
// prompt; Retry on it shows the new answer in place of the earlier one.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export async function rewindFromChat({ page, chat, chatText, chatSend, chatEnd, waitFor, step, out, workspace, text, openedText, showChat }) {
  writeFileSync(join(workspace, "rewind.txt"), "one\n");
  await chat.click("#new");
  await waitFor(() => chat.evaluate(() => document.body.dataset.session === ""), "the new chat", 60000);
  await chatSend(chat, "VSC rewind one: add first");
  await chatEnd(chat, /── done · 1 edit\b/, "the first prompt's end line");
  await chatSend(chat, "and two");
  await waitFor(() => chatText(chat).then((t) => (t.match(/── done · 1 edit\b/g) ?? []).length === 2), "the second prompt's end line", 120000);
  const prompts = () => chat.evaluate(() => [...document.querySelectorAll(".msg.user")].map((m) => m.querySelector("p")?.textContent ?? ""));
  assert.deepEqual(await prompts(), ["VSC rewind one: add first", "and two"]);
  // Retry goes with the last prompt only.
  assert.deepEqual(await chat.evaluate(() => [...document.querySelectorAll('[data-rewind="retry"]')].map((b) => b.hidden)), [true, false]);
  step("two prompts edited rewind.txt");

  // Fork from here on the second prompt: a new session with the first exchange, in the chat; then back to the first.
  const session = await chat.evaluate(() => document.body.dataset.session);
  await chat.evaluate(() => document.querySelector('[data-rewind="fork"][data-prompt="1"]').click());
  await waitFor(() => chat.evaluate((s) => document.body.dataset.session !== s, session), "the fork in the chat", 60000);
  await waitFor(() => prompts().then((p) => p.length === 1 && p[0] === "VSC rewind one: add first"), "the fork's one prompt", 60000);
  assert.match(await chatText(chat), /Added first\./, "the fork has the first exchange");
  assert.doesNotMatch(await chatText(chat), /Added second\./);
  step("forked from the second prompt");
  await chat.select("#session", session);
  await waitFor(() => prompts().then((p) => p.length === 2), "the first session again", 60000);

  await chat.evaluate(() => document.querySelector('[data-rewind="rewind"][data-prompt="1"]').click());
  const pick = await waitFor(() => text(".quick-input-widget").then((t) => (t.includes("Conversation and files") ? t : "")), "Rewind…'s quick pick", 60000);
  assert.match(pick, /Rewind to before prompt 2/, pick);
  assert.match(pick, /rewind\.txt \+1 −0/, pick);
  await page.screenshot({ path: join(out, "rewind-pick.png") });
  await page.keyboard.press("Enter"); // the first: conversation and files
  await waitFor(
    async () => {
      // Nobody changed rewind.txt after the agent (its edits are unsaved in the editor): nothing to ask.
      const toasts = await text(".notifications-toasts");
      if (/Keep mine/.test(toasts)) throw new Error(`the rewind asked about a conflict nobody made: ${toasts}`);
      const p = await prompts();
      return p.length === 1 && p[0] === "VSC rewind one: add first";
    },
    "the chat with one prompt",
    60000,
  );
  assert.doesNotMatch(await chatText(chat), /and two/, "the rewound prompt left the chat");
  await page.screenshot({ path: join(out, "rewind-chat.png") });
  step("rewound from the chat: one prompt left");
  assert.equal(await openedText("rewind.txt"), "one\nfirst\n", "rewind.txt is back as it was before the second prompt");
  step("rewind.txt is back");

  // Retry on the one prompt left: the chat shows it once, with the new answer only.
  const chat2 = await showChat();
  await chat2.evaluate(() => document.querySelector('[data-rewind="retry"][data-prompt="0"]').click());
  await waitFor(() => chatText(chat2).then((t) => t.includes("Retried: first is there.") && !t.includes("Added first.")), "the retried answer, the earlier one gone", 120000);
  assert.deepEqual(await prompts2(chat2), ["VSC rewind one: add first"]);
  step("retried the last prompt");
}

function prompts2(chat) {
  return chat.evaluate(() => [...document.querySelectorAll(".msg.user")].map((m) => m.querySelector("p")?.textContent ?? ""));
}
