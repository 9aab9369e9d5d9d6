// Unit tests of the agent's language intelligence from VS Code's language
// features (agent/diagnostics, agent/languageRequest) against the stubbed
// vscode API: LSP's shapes, settling on the diagnostics change event, the
// contract's fixtures, and the capability that makes the server ask.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import type { ClientCapabilities, StaticFeature } from "vscode-languageclient";
import { SettleTracker, diagnostics, languageForAgent, languageRequest, lspResult, quiet } from "../src/language";
import { requestExamples } from "./fixtures";
import { Range, Uri, stub } from "./vscode-stub";

/** A VS Code Diagnostic of the stub, from an LSP one (severities count from 0 in VS Code). */
function vsDiagnostic(d: { range: any; severity?: number; message: string; source?: string; code?: string | number }) {
  const r = d.range;
  return { range: new Range(r.start.line, r.start.character, r.end.line, r.end.character), severity: (d.severity ?? 1) - 1, message: d.message, source: d.source, code: d.code };
}

function tracker() {
  return new SettleTracker(stub.docChanges.event as any, stub.diagnosticsChanged.event as any);
}

beforeEach(() => stub.reset());

test("the contract's fixture: agent/diagnostics answers the editor's diagnostics of the document, settled", async () => {
  for (const ex of requestExamples["agent/diagnostics"]) {
    stub.reset();
    const t = tracker();
    for (const it of ex.result.items) {
      stub.diagnostics.set(it.uri, it.diagnostics.map(vsDiagnostic));
      stub.docChanges.fire({ document: { uri: Uri.parse(it.uri) }, contentChanges: [{}] });
    }
    setTimeout(() => stub.diagnosticsChanged.fire({ uris: ex.result.items.map((i) => Uri.parse(i.uri)) }), 20);
    assert.deepEqual(await diagnostics(ex.params, t), ex.result);
  }
});

test("diagnostics settle after a change event after the document's last change and a quiet period, else the wait runs out", async () => {
  const t = tracker();
  const u = Uri.file("/w/main.ts");
  stub.diagnostics.set(u.toString(), [vsDiagnostic({ range: { start: { line: 2, character: 12 }, end: { line: 2, character: 18 } }, message: "old" })]);
  stub.diagnosticsChanged.fire({ uris: [u] });
  assert.equal(t.settled(u.toString()), true);
  stub.docChanges.fire({ document: { uri: u }, contentChanges: [{}] }); // the agent's edit
  assert.equal(t.settled(u.toString()), false);
  const start = Date.now();
  const r = await diagnostics({ uris: [u.toString()], settle: 150 }, t);
  assert.equal(r.settled, false, "no change event: not settled");
  assert.ok(Date.now() - start >= 140, "waited for the event");
  setTimeout(() => {
    stub.diagnostics.set(u.toString(), []);
    stub.diagnosticsChanged.fire({ uris: [u] });
  }, 30);
  const settled = await diagnostics({ uris: [u.toString()], settle: 5000 }, t);
  assert.deepEqual(settled, { items: [{ uri: u.toString(), diagnostics: [] }], settled: true });
  stub.docChanges.fire({ document: { uri: u }, contentChanges: [] }); // a change of nothing (a save): still settled
  assert.equal(t.settled(u.toString()), true);
});

test("diagnostics reported in parts settle on the last part: the stale semantic error VS Code's TypeScript shows with the new syntax report is not the answer", async () => {
  const t = tracker();
  const u = Uri.file("/w/main.ts");
  const stale = [vsDiagnostic({ range: { start: { line: 2, character: 12 }, end: { line: 2, character: 18 } }, message: "Cannot find name 'greett'." })];
  stub.diagnostics.set(u.toString(), stale);
  stub.diagnosticsChanged.fire({ uris: [u] });
  stub.docChanges.fire({ document: { uri: u }, contentChanges: [{}] }); // the fix
  setTimeout(() => {
    stub.diagnosticsChanged.fire({ uris: [u] }); // the syntax part: the old semantic error still shown
  }, 20);
  setTimeout(
    () => {
      stub.diagnostics.set(u.toString(), []);
      stub.diagnosticsChanged.fire({ uris: [u] }); // the semantic part, within the quiet period
    },
    20 + quiet.min / 2,
  );
  const r = await diagnostics({ uris: [u.toString()], settle: 5000 }, t);
  assert.deepEqual(r, { items: [{ uri: u.toString(), diagnostics: [] }], settled: true });
});

test("the quiet period is as long as the first report took, within its bounds", () => {
  let now = 1000;
  const t = new SettleTracker(stub.docChanges.event as any, stub.diagnosticsChanged.event as any, () => now);
  const u = Uri.file("/w/slow.ts");
  stub.docChanges.fire({ document: { uri: u }, contentChanges: [{}] });
  now += 600; // a loaded server: its first report after 600 ms
  stub.diagnosticsChanged.fire({ uris: [u] });
  now += 599;
  assert.equal(t.settled(u.toString()), false, "quiet for less than the first report took");
  now += 1;
  assert.equal(t.settled(u.toString()), true);
  stub.docChanges.fire({ document: { uri: u }, contentChanges: [{}] });
  now += 10_000; // a report after 10 s: the quiet period is at most quiet.max
  stub.diagnosticsChanged.fire({ uris: [u] });
  now += quiet.max;
  assert.equal(t.settled(u.toString()), true);
  stub.docChanges.fire({ document: { uri: u }, contentChanges: [{}] });
  now += 1; // a quick first report: at least quiet.min
  stub.diagnosticsChanged.fire({ uris: [u] });
  now += quiet.min - 1;
  assert.equal(t.settled(u.toString()), false);
  now += 1;
  assert.equal(t.settled(u.toString()), true);
});

test("a file the editor never reported diagnostics for (a .txt) counts as settled when the wait runs out: nothing checks it", async () => {
  const t = tracker();
  const u = Uri.file("/w/notes.txt");
  stub.docChanges.fire({ document: { uri: u }, contentChanges: [{}] }); // the agent's edit
  const r = await diagnostics({ uris: [u.toString()], settle: 100 }, t);
  assert.equal(r.settled, true, "never checked: nothing pending");
  const ts = Uri.file("/w/checked.ts");
  stub.diagnosticsChanged.fire({ uris: [ts] }); // checked once
  stub.docChanges.fire({ document: { uri: ts }, contentChanges: [{}] });
  assert.equal((await diagnostics({ uris: [ts.toString(), u.toString()], settle: 100 }, t)).settled, false, "a checked file not reported on since its change");
});

test("no uris asks for every document with diagnostics, files only, without waiting", async () => {
  const d = vsDiagnostic({ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, severity: 2, message: "unused", source: "ts", code: 6133 });
  stub.diagnostics.set("file:///w/a.ts", [d]);
  stub.diagnostics.set("file:///w/clean.ts", []);
  stub.diagnostics.set("untitled:///Untitled-1", [d]);
  const r = await diagnostics({ uris: [] }, tracker());
  assert.deepEqual(r, {
    items: [{ uri: "file:///w/a.ts", diagnostics: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, severity: 2, message: "unused", source: "ts", code: 6133 }] }],
  });
});

test("the contract's fixture: agent/languageRequest answers what the provider command returns, in LSP's shape", async () => {
  for (const ex of requestExamples["agent/languageRequest"]) {
    stub.reset();
    const got: any[] = [];
    const locations = (ex.result as any[]).map((l) => ({ uri: Uri.parse(l.uri), range: new Range(l.range.start.line, l.range.start.character, l.range.end.line, l.range.end.character) }));
    stub.commands.set("vscode.executeDefinitionProvider", (...args: any[]) => {
      got.push(args);
      return locations;
    });
    assert.deepEqual(await languageRequest(ex.params), ex.result);
    const [uri, pos] = got[0];
    const params = ex.params.params as any;
    assert.equal(uri.toString(), params.textDocument.uri);
    assert.deepEqual([pos.line, pos.character], [params.position.line, params.position.character]);
  }
  await assert.rejects(languageRequest({ method: "textDocument/rename", params: {} }), /not one of/);
});

test("links, symbols and hovers become LSP's shapes", () => {
  const r = new Range(2, 5, 2, 10);
  assert.deepEqual(lspResult("textDocument/definition", [{ targetUri: Uri.file("/w/g.ts"), targetRange: new Range(2, 0, 4, 1), targetSelectionRange: r, originSelectionRange: new Range(0, 0, 0, 3) }]), [
    {
      targetUri: "file:///w/g.ts",
      targetRange: { start: { line: 2, character: 0 }, end: { line: 4, character: 1 } },
      targetSelectionRange: { start: { line: 2, character: 5 }, end: { line: 2, character: 10 } },
      originSelectionRange: { start: { line: 0, character: 0 }, end: { line: 0, character: 3 } },
    },
  ]);
  // VS Code's SymbolKind counts from 0 (Function = 11), LSP's from 1 (Function = 12).
  const outline = lspResult("textDocument/documentSymbol", [{ name: "T", detail: "", kind: 22, range: new Range(0, 0, 3, 1), selectionRange: r, children: [{ name: "f", kind: 7, range: r, selectionRange: r, children: [] }] }]) as any[];
  assert.equal(outline[0].kind, 23);
  assert.equal(outline[0].children[0].kind, 8);
  assert.deepEqual(outline[0].selectionRange, { start: { line: 2, character: 5 }, end: { line: 2, character: 10 } });
  assert.deepEqual(lspResult("workspace/symbol", [{ name: "greet", kind: 11, containerName: "", location: { uri: Uri.file("/w/g.ts"), range: r } }]), [
    { name: "greet", kind: 12, containerName: undefined, location: { uri: "file:///w/g.ts", range: { start: { line: 2, character: 5 }, end: { line: 2, character: 10 } } } },
  ]);
  assert.deepEqual(lspResult("textDocument/hover", [{ contents: [{ language: "typescript", value: "function greet(name: string): string" }, { value: "Greets." }] }]), {
    contents: { kind: "markdown", value: "```typescript\nfunction greet(name: string): string\n```\n\nGreets." },
  });
  assert.equal(lspResult("textDocument/hover", []), null);
  assert.equal(lspResult("textDocument/references", undefined), null);
  assert.equal(
    (
      lspResult(
        "textDocument/references",
        Array.from({ length: 5000 }, () => ({ uri: Uri.file("/w/g.ts"), range: r })),
      ) as unknown[]
    ).length,
    2000,
  );
});

test("the client declares experimental.language and answers both requests", async () => {
  const handlers = new Map<string, (p: any) => Promise<unknown>>();
  let feature: StaticFeature | undefined;
  languageForAgent({ registerFeature: (f) => (feature = f), onRequest: (m, h) => handlers.set(m, h) });
  const caps: ClientCapabilities = { experimental: { saveDocuments: true } };
  feature!.fillClientCapabilities(caps);
  assert.deepEqual(caps.experimental, { saveDocuments: true, language: true });
  assert.deepEqual([...handlers.keys()].sort(), ["agent/diagnostics", "agent/languageRequest"]);
  stub.diagnostics.set("file:///w/a.ts", []);
  assert.deepEqual(await handlers.get("agent/diagnostics")!({ uris: ["file:///w/a.ts"] }), { items: [{ uri: "file:///w/a.ts", diagnostics: [] }] });
});
