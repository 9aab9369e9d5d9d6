// Unit tests of saving before commands (agent/saveDocuments) against the
// stubbed vscode API: what is saved, what is not and why, the setting, and the
// capability that makes the server ask.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import type { ClientCapabilities, StaticFeature } from "vscode-languageclient";
import type { SaveDocumentsParams, SaveDocumentsResult } from "../src/protocol";
import { didSave, notSaved, saveDocuments, saveForAgent, saveRetry } from "../src/save";
import { requestExamples } from "./fixtures";
import { Uri, stub } from "./vscode-stub";
import { nth } from "./nth";

/** An open document of the stub: dirty or not; save answers as given and counts its calls. */
function doc(path: string, isDirty: boolean, save: () => Promise<boolean> = async () => true, text = "") {
  const d = {
    uri: Uri.file(path),
    isDirty,
    saves: 0,
    getText: () => text,
    async save() {
      d.saves++;
      const ok = await save();
      d.isDirty = d.isDirty && !ok;
      return ok;
    },
  };
  stub.textDocuments.push(d);
  return d;
}

beforeEach(() => {
  stub.reset();
  saveRetry.waitMs = 1;
});

test("a save VS Code refuses while it saves the file itself counts as saved once the disk has the text; a busy one is tried again", async () => {
  // VS Code is saving greet.go itself (a workspace edit that created a file): it refuses this save, the disk gets the text.
  stub.fileTexts.set("/w/greet.go", "package sample // with Sub\n");
  const racing = doc("/w/greet.go", true, async () => false, "package sample // with Sub\n");
  // Busy once, then saved.
  let tries = 0;
  const busy = doc("/w/busy.go", true, async () => ++tries > 1, "x");
  stub.fileTexts.set("/w/busy.go", "");
  // Refused for good: the disk keeps its old text.
  stub.fileTexts.set("/w/ro.go", "old");
  const ro = doc("/w/ro.go", true, async () => false, "new");
  const r = await saveDocuments({ uris: ["file:///w/greet.go", "file:///w/busy.go", "file:///w/ro.go"] }, true);
  assert.deepEqual(r, { saved: ["file:///w/greet.go", "file:///w/busy.go"], failed: [{ uri: "file:///w/ro.go", reason: notSaved.refused }] });
  assert.deepEqual([racing.saves, busy.saves, ro.saves], [1, 2, saveRetry.times + 1]);
});

test("a dirty document is saved; one not open, or open with nothing unsaved, counts as saved untouched", async () => {
  const greet = doc("/w/greet.go", true);
  const clean = doc("/w/clean.go", false);
  const r = await saveDocuments({ uris: ["file:///w/greet.go", "file:///w/closed.go", "file:///w/clean.go"] }, true);
  assert.deepEqual(r, { saved: ["file:///w/greet.go", "file:///w/closed.go", "file:///w/clean.go"], failed: [] });
  assert.deepEqual([greet.saves, greet.isDirty, clean.saves], [1, false, 0]);
});

test("only the documents asked for are saved, never the user's other unsaved ones", async () => {
  const mine = doc("/w/greet.go", true);
  const users = doc("/w/notes.go", true);
  await saveDocuments({ uris: ["file:///w/greet.go"] }, true);
  assert.deepEqual([mine.saves, users.saves, users.isDirty], [1, 0, true]);
});

test("the server's URIs match documents by their parsed form, not their spelling", async () => {
  const spaced = doc("/w/my file.go", true);
  const r = await saveDocuments({ uris: ["file:///w/my%20file.go"] }, true);
  assert.deepEqual(r.saved, ["file:///w/my%20file.go"], "answered with the URI as the server sent it");
  assert.equal(spaced.saves, 1);
});

test("a save VS Code refuses or that throws fails with a reason; the others are saved", async () => {
  doc("/w/ro.go", true, async () => false);
  doc("/w/gone.go", true, async () => {
    throw new Error("EROFS: read-only file system");
  });
  doc("/w/ok.go", true);
  const r = await saveDocuments({ uris: ["file:///w/ro.go", "file:///w/gone.go", "file:///w/ok.go"] }, true);
  assert.deepEqual(r, {
    saved: ["file:///w/ok.go"],
    failed: [
      { uri: "file:///w/ro.go", reason: notSaved.refused },
      { uri: "file:///w/gone.go", reason: "saving failed: EROFS: read-only file system" },
    ],
  });
  assert.match(notSaved.refused, /^VS Code did not save it/);
});

test("with agentLsp.saveBeforeCommands off, nothing is saved and every document fails saying so", async () => {
  const greet = doc("/w/greet.go", true);
  const r = await saveDocuments({ uris: ["file:///w/greet.go", "file:///w/closed.go"] }, false);
  assert.deepEqual(r, {
    saved: [],
    failed: [
      { uri: "file:///w/greet.go", reason: "agentLsp.saveBeforeCommands is off" },
      { uri: "file:///w/closed.go", reason: "agentLsp.saveBeforeCommands is off" },
    ],
  });
  assert.equal(greet.saves, 0);
});

/** A client that records what saveForAgent registers. */
function fakeClient() {
  const c = {
    features: [] as StaticFeature[],
    handlers: new Map<string, (p: SaveDocumentsParams) => Promise<SaveDocumentsResult>>(),
    registerFeature: (f: StaticFeature) => void c.features.push(f),
    onRequest: (method: string, h: (p: SaveDocumentsParams) => Promise<SaveDocumentsResult>) => void c.handlers.set(method, h),
  };
  return c;
}

test("the client declares experimental.saveDocuments, keeping other experimental capabilities", () => {
  const c = fakeClient();
  saveForAgent(
    c,
    () => true,
    () => {},
  );
  assert.equal(c.features.length, 1);
  const caps: ClientCapabilities = { experimental: { other: 1 } };
  nth(c.features, 0).fillClientCapabilities(caps);
  assert.deepEqual(caps.experimental, { other: 1, saveDocuments: true });
  const bare: ClientCapabilities = {};
  nth(c.features, 0).fillClientCapabilities(bare);
  assert.deepEqual(bare.experimental, { saveDocuments: true });
});

test("the handler reads the setting at each request and notes what it saved in the transcript", async () => {
  const c = fakeClient();
  let on = true;
  const lines: string[] = [];
  saveForAgent(
    c,
    () => on,
    (l) => lines.push(l),
  );
  const handle = c.handlers.get("agent/saveDocuments");
  assert.ok(handle, "agent/saveDocuments has a handler");
  doc("/w/greet.go", true);
  doc("/w/ro.go", true, async () => false);
  await handle({ uris: ["file:///w/greet.go", "file:///w/ro.go"] });
  assert.deepEqual(lines, ["  ⤓ saved for the command: greet.go", `  ⚠ not saved for the command: ro.go (${notSaved.refused})`]);
  on = false;
  lines.length = 0;
  const r = await handle({ uris: ["file:///w/greet.go"] });
  assert.deepEqual(r.failed, [{ uri: "file:///w/greet.go", reason: notSaved.off }], "a change of the setting applies to the next request");
  assert.deepEqual(lines, ["  ⚠ not saved for the command: greet.go (agentLsp.saveBeforeCommands is off)"]);
});

test("the contract's fixture: its request, with its documents open and unsaved, gets its answer", async () => {
  for (const ex of requestExamples["agent/saveDocuments"]) {
    stub.reset();
    for (const uri of ex.params.uris) {
      const failure = ex.result.failed.find((f) => f.uri === uri);
      doc(Uri.parse(uri).path, true, async () => !failure);
    }
    const r = await saveDocuments(ex.params, true);
    assert.deepEqual(r.saved, ex.result.saved);
    assert.deepEqual(
      r.failed.map((f) => f.uri),
      ex.result.failed.map((f) => f.uri),
    );
  }
});

test("didSave reaches the server only when the disk has the document's text, not for a save an edit overtook", async () => {
  const told: string[] = [];
  const next = async (d: any) => void told.push(d.uri.path);
  stub.fileTexts.set("/w/saved.go", "new");
  await didSave(doc("/w/saved.go", false, undefined, "new") as any, next);
  // files.autoSave wrote the text before the agent's edit, which landed during the save: the document is dirty again.
  stub.fileTexts.set("/w/overtaken.go", "before the edit");
  await didSave(doc("/w/overtaken.go", true, undefined, "with the edit") as any, next);
  // Not dirty, but the disk lags (the edit's change arrived before the save's news).
  stub.fileTexts.set("/w/lagging.go", "before the edit");
  await didSave(doc("/w/lagging.go", false, undefined, "with the edit") as any, next);
  assert.deepEqual(told, ["/w/saved.go"]);
});
