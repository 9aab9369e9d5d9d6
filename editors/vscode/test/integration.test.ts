// Integration test: the real agent-lsp binary, started with the very server
// options and initializationOptions the extension uses, driven through
// vscode-jsonrpc against the scripted model (a test double, not a model).
// The test plays the editor: it applies edits to its documents as VS Code
// does (unsaved), and saves them with the extension's own agent/saveDocuments
// handler over the stubbed vscode API. scripts/test.sh provides the binaries
// through the environment.
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as rpc from "vscode-jsonrpc/node";
import type { ApplyWorkspaceEditParams, ClientCapabilities } from "vscode-languageclient";
import { defaultSettings, initializationOptions, serverExecutable, tuning, type Settings } from "../src/config";
import { projectItem, sandboxSummary } from "../src/format";
import { applyTextEdits as applyLsp, revertEdit, splitLines } from "../src/hunks";
import { requests, type SessionDetail } from "../src/protocol";
import { decision, hunksOf, reviewFiles } from "../src/reviewModel";
import { saveForAgent } from "../src/save";
import { stub, Uri } from "./vscode-stub";
import { nth } from "./nth";

const bin = process.env["AGENT_LSP_BIN"];
const modelURL = process.env["AGENT_LSP_MODEL_URL"];
const sample = process.env["AGENT_LSP_SAMPLE"];
const missing = !bin || !modelURL || !sample;

type Started = {
  conn: rpc.MessageConnection;
  proc: ChildProcess;
  init: any;
  edits: any[];
  progress: any[];
  events: any[];
  /** The window/logMessage messages: the server's warnings, the settings it does not know among them. */
  logs: string[];
  /** The documents open in this "editor", by URI; also the stubbed workspace.textDocuments the save handler sees. */
  docs: Map<string, EditorDocument>;
  /** The transcript lines the extension adds (what it saved for a command). */
  notes: string[];
  /** What the "user" makes of an edit's text edits before they are applied (as unticking parts in the preview); as sent by default. */
  keep: (edits: TextEdit[]) => TextEdit[];
  /** How the "user" decides an edit that needs confirmation, as the extension's review answers it; unset: rejected. */
  review?: (p: ApplyWorkspaceEditParams) => Promise<ReturnType<typeof decision>>;
};

type Pos = { line: number; character: number };
type TextEdit = { range: { start: Pos; end: Pos }; newText: string };

/** A document open in the test "editor": edits leave it unsaved, as in VS Code, until save() writes it and says so (didSave). */
class EditorDocument {
  isDirty = false;
  readonly uri: Uri;
  constructor(
    private conn: rpc.MessageConnection,
    readonly path: string,
    public version: number,
    public text: string,
  ) {
    this.uri = Uri.file(path);
  }

  getText(): string {
    return this.text;
  }

  async save(): Promise<boolean> {
    writeFileSync(this.path, this.text);
    this.isDirty = false;
    await this.conn.sendNotification("textDocument/didSave", { textDocument: { uri: pathToFileURL(this.path).href } });
    return true;
  }
}

let dir = "";
before(() => {
  if (!missing) {
    dir = mkdtempSync(join(tmpdir(), "agent-lsp-vscode-"));
    cpSync(sample, join(dir, "sample"), { recursive: true });
  }
});
// The stores' daemons outlive the servers (their idle time): each is stopped first, so none
// writes into the folder while it is removed (retried: one still ending may remove its socket).
after(() => {
  if (!dir) {
    return;
  }
  for (const db of readdirSync(dir).filter((f) => f.endsWith(".db"))) {
    spawnSync(bin!, ["daemon", "stop", "--now", "--store", join(dir, db)], { stdio: "ignore", timeout: 30_000 });
  }
  rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 300 });
});

async function startServer(settings: Settings, root: string, init = initializationOptions(settings)): Promise<Started> {
  const exe = serverExecutable(settings, "scripted-key", { ...process.env, OPENAI_BASE_URL: modelURL, AGENT_LSP_MODEL: "scripted" });
  const proc = spawn(exe.command, exe.args, { env: exe.options.env, stdio: ["pipe", "pipe", "inherit"] });
  const s: Started = { proc, init: undefined, edits: [], progress: [], events: [], logs: [], docs: new Map(), notes: [], keep: (e) => e, conn: undefined as any };
  stub.reset(); // the save handler sees this editor's documents
  s.conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  // Like VS Code: a new file is created on disk, empty; an edit of a file not open opens it first
  // (didOpen); the edit changes the document, unsaved, and the server hears of it (didChange).
  s.conn.onRequest("workspace/applyEdit", async (p: any): Promise<{ applied: boolean; failureReason?: string }> => {
    s.edits.push(p);
    const review = Object.values(p.edit.changeAnnotations ?? {}).some((a: any) => a.needsConfirmation);
    if (review && !s.review) {
      return { applied: false, failureReason: "rejected in review" };
    }
    if (review) {
      const d = await s.review!(p);
      if ("refuse" in d) {
        return d.refuse;
      }
      p = d.apply;
    }
    for (const change of p.edit.documentChanges ?? []) {
      if (change.kind === "create") {
        writeFileSync(fileURLToPath(change.uri), "", { flag: "wx" });
        continue;
      }
      const uri = change.textDocument.uri;
      const doc = s.docs.get(uri) ?? (await openDocument(s, fileURLToPath(uri), 1));
      doc.text = applyTextEdits(doc.text, s.keep(change.edits));
      doc.version++;
      doc.isDirty = true;
      await s.conn.sendNotification("textDocument/didChange", { textDocument: { uri, version: doc.version }, contentChanges: [{ text: doc.text }] });
    }
    return { applied: true };
  });
  s.conn.onRequest("window/workDoneProgress/create", () => null);
  s.conn.onNotification("$/progress", (p) => void s.progress.push(p));
  s.conn.onNotification("agent/event", (e) => void s.events.push(e));
  s.conn.onNotification("window/logMessage", (p) => void s.logs.push(p.message));
  const capabilities: ClientCapabilities = {
    window: { workDoneProgress: true },
    workspace: { applyEdit: true, workspaceFolders: true, workspaceEdit: { documentChanges: true, resourceOperations: ["create"], changeAnnotationSupport: { groupsOnLabel: true } } },
  };
  // The extension's own capability and agent/saveDocuments handler, as its LanguageClient registers them.
  saveForAgent(
    { registerFeature: (f) => f.fillClientCapabilities(capabilities), onRequest: (method, handler) => s.conn.onRequest(method, handler) },
    () => settings.saveBeforeCommands,
    (line) => s.notes.push(line),
  );
  s.conn.listen();
  const uri = pathToFileURL(root).href;
  const initialized = s.conn.sendRequest("initialize", {
    processId: process.pid,
    rootUri: uri,
    workspaceFolders: [{ uri, name: "sample" }],
    capabilities,
    initializationOptions: init,
  });
  try {
    s.init = await initialized;
  } catch (e) {
    s.conn.dispose();
    proc.stdin.end(); // the server ends at the end of its input (a signal alone leaves it reading stdin)
    await exited(proc);
    throw e;
  }
  await s.conn.sendNotification("initialized", {});
  return s;
}

/** text with the LSP text edits applied (positions in UTF-16 code units, as JavaScript strings count). */
function applyTextEdits(text: string, edits: TextEdit[]): string {
  const lines = text.split("\n");
  const offset = (p: Pos) => lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
  const sorted = [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
  return sorted.reduce((t, e) => t.slice(0, offset(e.range.start)) + e.newText + t.slice(offset(e.range.end)), text);
}

/** Opens the file at path in the "editor" s, at version. */
async function openDocument(s: Started, path: string, version: number): Promise<EditorDocument> {
  const uri = pathToFileURL(path).href;
  const doc = new EditorDocument(s.conn, path, version, readFileSync(path, "utf8"));
  s.docs.set(uri, doc);
  stub.textDocuments.push(doc);
  await s.conn.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "go", version, text: doc.text } });
  return doc;
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
    assert.ok(
      mine.some((v) => v.kind === "report" && /edit_file/.test(v.message)),
      JSON.stringify(mine),
    );
    assert.equal(mine.at(-1).kind, "end");
    const types = s.events.map((e) => e.type);
    for (const t of ["run.start", "tool.start", "edit", "run.end"]) assert.ok(types.includes(t), `agent/event ${t} in ${types.join(", ")}`);
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
    const ann = Object.values<any>(s.edits[0].edit.changeAnnotations);
    assert.equal(ann[0].needsConfirmation, true);
    assert.ok(
      s.events.some((e) => e.type === "edit" && e.applied === false),
      "edit event reports the rejection",
    );
    const detail: any = await s.conn.sendRequest("workspace/executeCommand", { command: "agent.session", arguments: [{ session: result.session }] });
    const tool = detail.messages.find((m: any) => m.role === "tool");
    assert.match(tool.content, /rejected in review/);
  } finally {
    await stop(s);
  }
});

test("a review that keeps one hunk of an edit and rejects the other: the file gets the kept one, the agent is told the rejected lines", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = workspaceCopy("hunks", { "review.txt": "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n" });
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "hunks.db"), edits: "review" };
  const s = await startServer(settings, root);
  try {
    // The agent replaces lines 2-7 in one edit; the review cuts it into two hunks: accept the first, reject the second.
    s.review = async (p) => {
      const files = await reviewFiles(p, async (uri) => s.docs.get(uri)?.text ?? readFileSync(fileURLToPath(uri), "utf8"));
      const [first, second] = hunksOf(nth(files, 0));
      assert.ok(first && second, "two hunks");
      assert.deepEqual([first.lines, second.lines], [["TWO\n"], ["SEVEN\n"]]);
      nth(files, 0).accepted.add(first.key);
      nth(files, 0).current = applyLsp(nth(files, 0).current, [revertEdit(splitLines(nth(files, 0).current), second)]);
      return decision(p, files, true);
    };
    const result: any = await s.conn.sendRequest("workspace/executeCommand", {
      command: "agent.run",
      arguments: [{ prompt: "VSC review two hunks", edits: settings.edits }],
    });
    assert.equal(result.status, "done", JSON.stringify(result));
    const doc = s.docs.get(pathToFileURL(join(root, "review.txt")).href);
    assert.equal(doc?.text, "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\n", "exactly the accepted hunk landed");
    const told = await toolResult(s, result.session, "edit_file");
    assert.match(told, /the edit of review\.txt was applied with changes by the user at lines 7-7/, told);
  } finally {
    await stop(s);
  }
});

/** The content of the tool message answering the session's first call of tool name. */
async function toolResult(s: Started, session: string, name: string): Promise<string> {
  const detail: SessionDetail = await s.conn.sendRequest("workspace/executeCommand", { command: requests.session.command, arguments: [{ session }] });
  const call = detail.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.name === name);
  const answer = detail.messages.find((m) => m.role === "tool" && m.toolCallId === call?.id);
  assert.ok(answer, `no result of ${name} in ${JSON.stringify(detail.messages)}`);
  return answer.content;
}

/** A copy of the sample workspace for one test, with files added. */
function workspaceCopy(name: string, files: Record<string, string> = {}): string {
  const root = join(dir, name);
  cpSync(sample!, root, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(root, file), text);
  return root;
}

test("the extension saves the agent's edits before its command: the tests it runs see them", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = workspaceCopy("saved");
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "saved.db") };
  const s = await startServer(settings, root);
  try {
    const greet = join(root, "greet.go");
    await openDocument(s, greet, 1);
    // The agent creates sub_test.go (empty on disk, its text in the editor) and adds Sub to greet.go, then runs go test.
    const result: any = await s.conn.sendRequest("workspace/executeCommand", {
      command: "agent.run",
      arguments: [{ prompt: "Add Sub and run the tests", edits: settings.edits }],
    });
    assert.equal(result.status, "done", JSON.stringify(result));
    assert.equal(result.edits, 2);
    // Unsaved, sub_test.go would be empty on disk and the build would fail: exit status 0 is the proof.
    const ran = await toolResult(s, result.session, "run_command");
    assert.match(ran, /^exit status 0\n\$ go test \.\/\.\.\.\nok\s+example\.com\/sample/, ran);
    assert.doesNotMatch(ran, /unsaved in the editor/);
    assert.match(readFileSync(greet, "utf8"), /func Sub\(a, b int\) int \{/);
    assert.match(readFileSync(join(root, "sub_test.go"), "utf8"), /func TestSub\(t \*testing\.T\)/);
    assert.deepEqual(
      [...s.docs.values()].map((d) => [d.path, d.isDirty]),
      [
        [greet, false],
        [join(root, "sub_test.go"), false],
      ],
    );
    assert.equal(s.notes.length, 1, s.notes.join("\n"));
    assert.match(nth(s.notes, 0), /^ {2}⤓ saved for the command: (greet\.go, sub_test\.go|sub_test\.go, greet\.go)$/);
  } finally {
    await stop(s);
  }
});

test("with agentLsp.saveBeforeCommands off, nothing is saved: the command runs on the disk and the agent is told why", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = workspaceCopy("unsaved");
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "unsaved.db"), saveBeforeCommands: false };
  const s = await startServer(settings, root);
  try {
    const greet = join(root, "greet.go");
    const before = readFileSync(greet, "utf8");
    const doc = await openDocument(s, greet, 1);
    const result: any = await s.conn.sendRequest("workspace/executeCommand", {
      command: "agent.run",
      arguments: [{ prompt: "Add Mul and run the tests", edits: settings.edits }],
    });
    assert.equal(result.status, "done", JSON.stringify(result));
    const ran = await toolResult(s, result.session, "run_command");
    assert.match(ran, /^note: the command ran on the files on disk; unsaved in the editor: greet\.go \(your edit; agentLsp\.saveBeforeCommands is off\)\n/, ran);
    assert.equal(readFileSync(greet, "utf8"), before, "the disk is as it was");
    assert.deepEqual([doc.isDirty, doc.text.includes("func Mul(a, b int) int")], [true, true], "the edit waits unsaved in the editor");
    assert.deepEqual(s.notes, ["  ⚠ not saved for the command: greet.go (agentLsp.saveBeforeCommands is off)"]);
  } finally {
    await stop(s);
  }
});

test("an edit the user keeps only in part reaches the agent as changed by the user at those lines", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = workspaceCopy("partial", { "notes.txt": "one\ntwo\nthree\nfour\nfive\n" });
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "partial.db") };
  const s = await startServer(settings, root);
  try {
    // The server sends the change as one text edit; the "user" keeps its first line and not its last,
    // as unticking in VS Code's preview or changing the edit before applying it does.
    s.keep = (edits) => edits.map((e) => ({ ...e, newText: e.newText.replace("FIVE", "five") }));
    const result: any = await s.conn.sendRequest("workspace/executeCommand", {
      command: "agent.run",
      arguments: [{ prompt: "Capitalize the first and last lines of notes.txt", edits: settings.edits }],
    });
    assert.equal(result.status, "done", JSON.stringify(result));
    const notes = s.docs.get(pathToFileURL(join(root, "notes.txt")).href);
    assert.equal(notes?.text, "ONE\ntwo\nthree\nfour\nfive\n", "the edit landed in part");
    const edited = await toolResult(s, result.session, "edit_file");
    assert.match(edited, /the edit of notes\.txt was applied with changes by the user at lines 5-5/, edited);
    const end = s.events.find((e) => e.type === "tool.end" && e.name === "edit_file");
    assert.equal(end?.ok, false, "the tool call is an error for the model");
  } finally {
    await stop(s);
  }
});

test("the request table names exactly the server's commands, and projects render with their stack", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = join(dir, "sample");
  const s = await startServer({ ...defaultSettings, path: bin!, storePath: join(dir, "projects.db") }, root);
  try {
    const advertised: string[] = s.init.capabilities.executeCommandProvider.commands;
    assert.deepEqual(
      Object.values(requests)
        .map((r) => r.command)
        .sort(),
      [...advertised].sort(),
    );
    const projects: any[] = await s.conn.sendRequest("workspace/executeCommand", { command: requests.projects.command, arguments: [{}] });
    const item = projectItem(projects[0]);
    assert.equal(item.label, "sample");
    assert.match(item.description, /^go 1\.22 · go modules/);
    assert.equal(item.detail, `${root} · build: go build ./... · test: go test ./... · ${sandboxSummary(projects[0].sandbox)}`);
    assert.match(sandboxSummary(projects[0].sandbox), /^(sandbox workspace-write · |not sandboxed: )/);
  } finally {
    await stop(s);
  }
});

/** The server's warnings about initializationOptions keys it does not know: sent in window/logMessage before its answer to initialize. */
const unknownKeys = (s: Started) => s.logs.filter((m) => m.includes("is not a setting"));

test("the server takes allowEdit and scrubEnv as the extension sends them", { skip: missing && "set by scripts/test.sh" }, async () => {
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "settings.db"), allowEdit: [".vscode/settings.json"], scrubEnv: ["*_TOKEN"] };
  const s = await startServer(settings, join(dir, "sample"));
  try {
    assert.ok(s.init.capabilities, "a wrong type would fail initialize");
    assert.deepEqual(unknownKeys(s), []);
  } finally {
    await stop(s);
  }
  // The same check catches a key the server does not know.
  const wrong = await startServer(settings, join(dir, "sample"), { ...initializationOptions(settings), allowEdits: ["x"] });
  try {
    assert.deepEqual(unknownKeys(wrong), ["agent-lsp: initializationOptions.allowEdits is not a setting of agent-lsp; ignored"]);
  } finally {
    await stop(wrong);
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
    const running = s.conn.sendRequest("workspace/executeCommand", { command: "agent.run", arguments: [{ prompt: "this one is slow", edits: settings.edits }] }) as Promise<any>; // eslint-disable-line @typescript-eslint/no-unnecessary-type-assertion -- sendRequest answers any
    const start = await eventOf(s, (e) => e.type === "run.start");
    assert.equal(start.contextTokens, 16384, "run.start reports the context size the extension set");
    assert.deepEqual(unknownKeys(s), []);
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

/** Runs agent.run with args through s, as the extension does. */
function runOn(s: Started, args: Record<string, unknown>): Promise<any> {
  return s.conn.sendRequest("workspace/executeCommand", { command: requests.run.command, arguments: [{ edits: "apply", ...args }] }) as Promise<any>; // eslint-disable-line @typescript-eslint/no-unnecessary-type-assertion -- sendRequest answers any
}

test("the model picker's model: agent.models lists the endpoint's, a run naming one uses it (usage, the session), an unknown one is refused naming them", { skip: missing && "set by scripts/test.sh" }, async () => {
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "models.db") };
  const s = await startServer(settings, join(dir, "sample"));
  try {
    const list: any = await s.conn.sendRequest("workspace/executeCommand", { command: requests.models.command, arguments: [{}] });
    assert.deepEqual(
      list.models.map((m: any) => m.id),
      ["scripted", "scripted-large"],
    );
    assert.equal(list.current, "scripted");
    const result = await runOn(s, { prompt: "VSC which model answers", model: "scripted-large" });
    assert.equal(result.status, "done", JSON.stringify(result));
    const usage = s.events.filter((e) => e.type === "usage" && e.session === result.session);
    assert.ok(usage.length > 0 && usage.every((e) => e.model === "scripted-large"), JSON.stringify(usage));
    const rows: any[] = await s.conn.sendRequest("workspace/executeCommand", { command: requests.sessions.command, arguments: [{}] });
    assert.equal(rows.find((r) => r.session === result.session)?.model, "scripted-large", "the session records the model");
    // A follow-up naming none keeps the session's model.
    const again = await runOn(s, { prompt: "and again", session: result.session });
    assert.equal(s.events.filter((e) => e.type === "usage" && e.session === again.session).at(-1)?.model, "scripted-large");
    await assert.rejects(runOn(s, { prompt: "VSC which model answers", model: "gpt-nope" }), (e: any) => {
      assert.equal(e.code, -32602);
      assert.match(e.message, /gpt-nope/);
      assert.match(e.message, /scripted-large/, "the refusal names the offered models");
      return true;
    });
  } finally {
    await stop(s);
  }
});

test("a settings change reaches the running server as didChangeConfiguration: the next run uses it, no restart", { skip: missing && "set by scripts/test.sh" }, async () => {
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "live.db"), contextTokens: 16384 };
  const s = await startServer(settings, join(dir, "sample"));
  try {
    const first = await runOn(s, { prompt: "VSC settings live one" });
    const start1 = await eventOf(s, (e) => e.type === "run.start" && e.session === first.session);
    assert.equal(start1.contextTokens, 16384);
    // What settingsChange.ts makes the client send: the settings in initializationOptions' shape.
    await s.conn.sendNotification("workspace/didChangeConfiguration", { settings: initializationOptions({ ...settings, contextTokens: 32768, prices: { scripted: { input: 2, output: 8 } } }) });
    const second = await runOn(s, { prompt: "VSC settings live two" });
    const start2 = await eventOf(s, (e) => e.type === "run.start" && e.session === second.session);
    assert.equal(start2.contextTokens, 32768, "the next run uses the new context size");
    assert.ok(second.usage.cost > 0, `the new prices give a cost: ${JSON.stringify(second.usage)}`);
    assert.equal(s.proc.exitCode, null, "the same server process");
    // A value the server refuses comes back as a message, the old settings kept.
    const shown: string[] = [];
    s.conn.onNotification("window/showMessage", (p: any) => void shown.push(p.message));
    await s.conn.sendNotification("workspace/didChangeConfiguration", { settings: { ...initializationOptions(settings), window: 3 } });
    for (let i = 0; i < 100 && shown.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.match(shown.join("\n"), /window/, shown.join("\n"));
  } finally {
    await stop(s);
  }
});

test("a failed run's result says what failed in a sentence", { skip: missing && "set by scripts/test.sh" }, async () => {
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "failed.db") };
  const s = await startServer(settings, join(dir, "sample"));
  try {
    const result = await runOn(s, { prompt: "VSC fail please" });
    assert.equal(result.status, "failed");
    assert.match(result.error, /refused the request \(HTTP 400\): the model refused the request/);
    const end = await eventOf(s, (e) => e.type === "run.end" && e.session === result.session);
    assert.equal(end.error, result.error);
  } finally {
    await stop(s);
  }
});

test("#file and #selection go as context references: the server reads the editor's unsaved text", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = workspaceCopy("context", { "notes.txt": "nothing to see\n" });
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "context.db") };
  const s = await startServer(settings, root);
  try {
    const notes = join(root, "notes.txt");
    const doc = await openDocument(s, notes, 1);
    // Unsaved in the editor: only the server reading the editor's text sees the token.
    doc.text = "line one\nVSC-okapi-context lives here\n";
    doc.version++;
    await s.conn.sendNotification("textDocument/didChange", { textDocument: { uri: pathToFileURL(notes).href, version: doc.version }, contentChanges: [{ text: doc.text }] });
    const uri = pathToFileURL(notes).href;
    const result = await runOn(s, { prompt: "What does #selection say?", context: [{ uri, range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } } }] });
    assert.equal(result.status, "done", JSON.stringify(result));
    assert.equal(result.reply, "The attached buffer mentions an okapi.");
  } finally {
    await stop(s);
  }
});
