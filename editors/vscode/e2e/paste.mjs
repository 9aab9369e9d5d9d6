// An image pasted into the chat's prompt box goes with the prompt: the box
// says "1 image attached", and the model's request carries the image as an
// image_url part of the prompt's message. The scripted model's list says
// scripted-large takes images (test/scripts/conversations.json's
// inputModalities), so the server's vision check (model.vision auto) passes
// by the endpoint's list, as with OpenRouter.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

// A 4x4 red PNG.
const png = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==";

export async function pastedImage({ chat, chatText, chatSend, waitFor, step, out, page }) {
  await chat.click("#new");
  await chat.click("#prompt");
  // What the browser does on Ctrl+V with an image on the clipboard: a paste event whose clipboardData holds the file.
  await chat.evaluate((b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], "shot.png", { type: "image/png" }));
    document.getElementById("prompt").dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
  }, png);
  await waitFor(() => chat.$eval("#attached", (el) => !el.hidden && el.textContent.includes("1 image attached")).catch(() => false), "the attached image's note", 30000);
  await page.screenshot({ path: join(out, "pasted-image.png") });
  await chatSend(chat, "VSC pasted image: what is in it?");
  await waitFor(() => chatText(chat).then((t) => t.includes("A small red square.") && t.includes("── done")), "the reply to the pasted image", 60000);
  assert.ok(await chat.$eval("#attached", (el) => el.hidden), "the note goes once the prompt is sent");
  const request = readFileSync(process.env.E2E_REQUESTS, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
    .find((r) => r.messages.some((m) => JSON.stringify(m.content ?? "").includes("VSC pasted image")));
  assert.ok(request, "the model got the prompt");
  const message = request.messages.find((m) => JSON.stringify(m.content ?? "").includes("VSC pasted image"));
  assert.ok(Array.isArray(message.content), `the prompt's message has parts: ${JSON.stringify(message).slice(0, 300)}`);
  const image = message.content.find((p) => p.type === "image_url");
  assert.match(image?.image_url?.url ?? "", /^data:image\/png;base64,/, `an image part: ${JSON.stringify(message.content).slice(0, 300)}`);
  step(`a pasted image reached the model (${image.image_url.url.length} bytes of data URL)`);
}
