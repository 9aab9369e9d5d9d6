// Writes the scripted model's script for the VS Code tests: the editors'
// shared script (testdata/scripts/editors.json) with this extension's own
// conversations, model list and the list's input modalities
// (test/scripts/conversations.json) added, so
// that the shared file, which the Neovim tests also use, stays as it is.
// Usage: node scripts/script.mjs OUT
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ext = join(dirname(fileURLToPath(import.meta.url)), "..");
const shared = JSON.parse(readFileSync(join(ext, "..", "..", "testdata", "scripts", "editors.json"), "utf8"));
const own = JSON.parse(readFileSync(join(ext, "test", "scripts", "conversations.json"), "utf8"));
// The scripted model answers a prompt from the first conversation whose match it contains. Ours come
// first, so none may match inside a shared one's match: it would take the prompts meant for that one.
const clash = own.conversations.filter((o) => shared.conversations.some((c) => c.match.includes(o.match)));
if (clash.length) {
  throw new Error(`conversations that would take the shared ones' prompts: ${clash.map((c) => c.match).join(", ")}`);
}
writeFileSync(process.argv[2], JSON.stringify({ ...shared, models: own.models, inputModalities: own.inputModalities, conversations: [...own.conversations, ...shared.conversations] }, null, 1));
