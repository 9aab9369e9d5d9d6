// Integration test: the real agent-lsp binary, started with the very server
// options and initializationOptions the extension uses, driven through
// vscode-jsonrpc against the scripted model (a test double, not a model).
// scripts/test.sh provides the binaries through the environment.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import * as rpc from "vscode-jsonrpc/node";
import { defaultSettings, initializationOptions, serverExecutable, tuning, type Settings } from "../src/config";
import { projectItem } from "../src/format";
import { requests } from "../src/protocol";

const bin = process.env.AGENT_LSP_BIN;
const modelURL = process.env.AGENT_LSP_MODEL_URL;
const sample = process.env.AGENT_LSP_SAMPLE;
const missing = !bin || !modelURL || !sample;

type Started = {
  conn: rpc.MessageConnection;
  proc: ChildProcess;
  init: any;
  edits: any[];
  progress: any[];
  events: any[];
  stderr: string[];
  /** The documents open in this "editor", by URI. */
  docs: Map<string, { version: number; text: string }>;
};

let dir = "";
before(() => {
  if (!missing) {
    dir = mkdtempSync(join(tmpdir(), "agent-lsp-vscode-"));
    cpSync(sample!, join(dir, "sample"), { recursive: true });
  }
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

async function startServer(settings: Settings, root: string): Promise<Started> {
  const exe = serverExecutable(settings, "scripted-key", { ...process.env, OPENAI_BASE_URL: modelURL, AGENT_LSP_MODEL: "scripted" });
  const proc = spawn(exe.command, exe.args, { env: exe.options.env, stdio: ["pipe", "pipe", "pipe"] });
  const s: Started = { proc, init: undefined, edits: [], progress: [], events: [], stderr: [], docs: new Map(), conn: undefined as any };
  proc.stderr!.on("data", (d) => s.stderr.push(String(d)));
  s.conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout!), new rpc.StreamMessageWriter(proc.stdin!));
  // Like an editor: an edit of an open document changes it, and the server hears of it (didChange).
  s.conn.onRequest("workspace/applyEdit", async (p: any): Promise<{ applied: boolean; failureReason?: string }> => {
    s.edits.push(p);
    const review = Object.values(p.edit.changeAnnotations ?? {}).some((a: any) => a.needsConfirmation);
    if (review) {
      return { applied: false, failureReason: "rejected in review" };
    }
    for (const change of p.edit.documentChanges ?? []) {
      const doc = change.textDocument && s.docs.get(change.textDocument.uri);
      if (doc && change.edits) {
        doc.text = applyTextEdits(doc.text, change.edits);
        doc.version++;
        await s.conn.sendNotification("textDocument/didChange", {
          textDocument: { uri: change.textDocument.uri, version: doc.version },
          contentChanges: [{ text: doc.text }],
        });
      }
    }
    return { applied: true };
  });
  s.conn.onRequest("window/workDoneProgress/create", () => null);
  s.conn.onNotification("$/progress", (p) => void s.progress.push(p));
  s.conn.onNotification("agent/event", (e) => void s.events.push(e));
  s.conn.listen();
  const uri = pathToFileURL(root).href;
  const initialized = s.conn.sendRequest("initialize", {
    processId: process.pid,
    rootUri: uri,
    workspaceFolders: [{ uri, name: "sample" }],
    capabilities: {
      window: { workDoneProgress: true },
      workspace: { applyEdit: true, workspaceFolders: true, workspaceEdit: { documentChanges: true, resourceOperations: ["create"], changeAnnotationSupport: { groupsOnLabel: true } } },
    },
    initializationOptions: initializationOptions(settings),
  });
  try {
    s.init = await initialized;
  } catch (e) {
    s.conn.dispose();
    proc.stdin!.end(); // the server ends at the end of its input (a signal alone leaves it reading stdin)
    await exited(proc);
    throw e;
  }
  await s.conn.sendNotification("initialized", {});
  return s;
}

/** text with the LSP text edits applied (positions in UTF-16 code units, as JavaScript strings count). */
function applyTextEdits(text: string, edits: { range: { start: Pos; end: Pos }; newText: string }[]): string {
  const lines = text.split("\n");
  const offset = (p: Pos) => lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
  const sorted = [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
  return sorted.reduce((t, e) => t.slice(0, offset(e.range.start)) + e.newText + t.slice(offset(e.range.end)), text);
}
type Pos = { line: number; character: number };

/** Opens the file at path in the "editor" s, at version. */
async function openDocument(s: Started, path: string, version: number): Promise<void> {
  const uri = pathToFileURL(path).href;
  const text = readFileSync(path, "utf8");
  s.docs.set(uri, { version, text });
  await s.conn.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "go", version, text } });
}

async function stop(s: Started): Promise<void> {
  await s.conn.sendRequest("shutdown");
  await s.conn.sendNotification("exit");
  await exited(s.proc);
  s.conn.dispose();
}

/** Resolves once proc has exited. */
function exited(proc: ChildProcess): Promise<unknown> {
  return new Promise((r) => (proc.exitCode !== null || proc.signalCode !== null ? r(null) : proc.once("exit", r)));
}

test("a scripted run through the extension's server options edits the open buffer with progress", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = join(dir, "sample");
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "sessions.db") };
  const s = await startServer(settings, root);
  try {
    const greet = join(root, "greet.go");
    await openDocument(s, greet, 7);
    const result: any = await s.conn.sendRequest("workspace/executeCommand", {
      command: "agent.run",
      arguments: [{ prompt: "Add a Farewell function next to Greet", edits: settings.edits }],
      workDoneToken: "vscode-1",
    });
    assert.equal(result.status, "done", JSON.stringify(result));
    assert.equal(result.edits, 1);
    assert.equal(s.edits.length, 1);
    const edit = s.edits[0];
    assert.match(edit.label, /^agent: /);
    const change = edit.edit.documentChanges[0];
    assert.equal(change.textDocument.uri, pathToFileURL(greet).href);
    assert.equal(change.textDocument.version, 7, "the edit targets the version the editor sent");
    assert.match(change.edits.map((e: any) => e.newText).join(""), /func Farewell\(name string\) string/);
    assert.equal(readFileSync(greet, "utf8").includes("Farewell"), false, "nothing is written behind the editor's back");
    assert.match(s.docs.get(pathToFileURL(greet).href)!.text, /return "Hello, " \+ name\n}\n\n\/\/ Farewell says goodbye/, "the edit lands in the buffer");
    const mine = s.progress.filter((p) => p.token === "vscode-1").map((p) => p.value);
    assert.equal(mine[0].kind, "begin");
    assert.match(mine[0].title, /^agent: Add a Farewell function/);
    assert.equal(mine[0].cancellable, true);
    assert.ok(mine.some((v) => v.kind === "report" && /edit_file/.test(v.message)), JSON.stringify(mine));
    assert.equal(mine.at(-1).kind, "end");
    const types = s.events.map((e) => e.type);
    for (const t of ["run.start", "tool.start", "edit", "run.end"]) assert.ok(types.includes(t), `agent/event ${t} in ${types}`);
    const edited = s.events.find((e) => e.type === "tool.end" && e.name === "edit_file");
    assert.equal(edited?.ok, true, `the edit succeeded: ${JSON.stringify(edited)}`);
  } finally {
    await stop(s);
  }
});

test("review mode marks every edit as needing confirmation, and a rejection reaches the agent", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = join(dir, "sample");
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "review.db"), edits: "review" };
  const s = await startServer(settings, root);
  try {
    const result: any = await s.conn.sendRequest("workspace/executeCommand", {
      command: "agent.run",
      arguments: [{ prompt: "Exclaim in Greet", edits: settings.edits }],
    });
    assert.equal(result.status, "done", JSON.stringify(result));
    assert.equal(result.edits, 0, "a rejected edit is not counted as applied");
    const ann = Object.values(s.edits[0].edit.changeAnnotations) as any[];
    assert.equal(ann[0].needsConfirmation, true);
    assert.ok(s.events.some((e) => e.type === "edit" && e.applied === false), "edit event reports the rejection");
    const detail: any = await s.conn.sendRequest("workspace/executeCommand", { command: "agent.session", arguments: [{ session: result.session }] });
    const tool = detail.messages.find((m: any) => m.role === "tool");
    assert.match(tool.content, /rejected in review/);
  } finally {
    await stop(s);
  }
});

test("the request table names exactly the server's commands, and projects render with their stack", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = join(dir, "sample");
  const s = await startServer({ ...defaultSettings, path: bin!, storePath: join(dir, "projects.db") }, root);
  try {
    const advertised: string[] = s.init.capabilities.executeCommandProvider.commands;
    assert.deepEqual(Object.values(requests).map((r) => r.command).sort(), [...advertised].sort());
    const projects: any[] = await s.conn.sendRequest("workspace/executeCommand", { command: requests.projects.command, arguments: [{}] });
    const item = projectItem(projects[0]);
    assert.equal(item.label, "sample");
    assert.match(item.description, /^go 1\.22 · go modules/);
    assert.equal(item.detail, `${root} · build: go build ./... · test: go test ./...`);
  } finally {
    await stop(s);
  }
});

test("the server takes allowEdit and scrubEnv as the extension sends them", { skip: missing && "set by scripts/test.sh" }, async () => {
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "settings.db"), allowEdit: [".vscode/settings.json"], scrubEnv: ["*_TOKEN"] };
  const s = await startServer(settings, join(dir, "sample"));
  try {
    assert.ok(s.init.capabilities, "a wrong type would fail initialize");
    // The server logs unknown keys before the line that ends initialize.
    for (let i = 0; i < 100 && !s.stderr.join("").includes("project(s)"); i++) await new Promise((r) => setTimeout(r, 20));
    const log = s.stderr.join("");
    assert.match(log, /project\(s\)/);
    assert.doesNotMatch(log, /is not a setting/);
  } finally {
    await stop(s);
  }
});

/** Waits until pred holds for one of s's events, and returns it. */
async function eventOf(s: Started, pred: (e: any) => boolean): Promise<any> {
  for (let i = 0; i < 500; i++) {
    const e = s.events.find(pred);
    if (e) return e;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no such event in ${JSON.stringify(s.events.map((e) => e.type))}`);
}

test("the context settings reach the server, and a follow-up to the running session is queued, then offered back when the run is cancelled", { skip: missing && "set by scripts/test.sh" }, async () => {
  const settings: Settings = {
    ...defaultSettings,
    path: bin!,
    storePath: join(dir, "queue.db"),
    contextTokens: 16384,
    window: 50,
    toolOutput: 4096,
    readOnlySubagents: true,
  };
  const s = await startServer(settings, join(dir, "sample"));
  try {
    const running = s.conn.sendRequest("workspace/executeCommand", { command: "agent.run", arguments: [{ prompt: "this one is slow", edits: settings.edits }] }) as Promise<any>;
    const start = await eventOf(s, (e) => e.type === "run.start");
    assert.equal(start.contextTokens, 16384, "run.start reports the context size the extension set");
    assert.doesNotMatch(s.stderr.join(""), /is not a setting/);
    const queued: any = await s.conn.sendRequest("workspace/executeCommand", {
      command: "agent.run",
      arguments: [{ prompt: "Also say hi", session: start.session, edits: settings.edits }],
    });
    assert.deepEqual([queued.status, queued.position, queued.session], ["queued", 1, start.session]);
    const ev = await eventOf(s, (e) => e.type === "message.queued");
    assert.deepEqual([ev.position, ev.message.content], [1, "Also say hi"]);
    assert.deepEqual(await s.conn.sendRequest("workspace/executeCommand", { command: "agent.cancel", arguments: [{ session: start.session }] }), { cancelled: true });
    const result = await running;
    assert.equal(result.status, "cancelled");
    assert.deepEqual(result.queued, ["Also say hi"], "the prompt the run never read comes back");
  } finally {
    await stop(s);
  }
});

test("the ranges the extension checks are the server's: both bounds start it, one past fails initialize naming the setting", { skip: missing && "set by scripts/test.sh" }, async () => {
  for (const [key, t] of Object.entries(tuning)) {
    if (!t.range) continue;
    const [min, max] = t.range;
    for (const value of [min, max, min - 1, max + 1]) {
      const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, `${key}-${value}.db`), [key]: value };
      const started = startServer(settings, join(dir, "sample"));
      if (value === min || value === max) {
        await stop(await started);
        continue;
      }
      await assert.rejects(started, (e: Error) => {
        assert.ok(e.message.includes(t.init), `${key} ${value}: ${e.message}`);
        return true;
      });
    }
  }
});
