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
import { defaultSettings, initializationOptions, serverExecutable, type Settings } from "../src/config";
import { projectItem, sandboxSummary } from "../src/format";
import { requests } from "../src/protocol";

const bin = process.env.AGENT_LSP_BIN;
const modelURL = process.env.AGENT_LSP_MODEL_URL;
const sample = process.env.AGENT_LSP_SAMPLE;
const missing = !bin || !modelURL || !sample;

type Started = { conn: rpc.MessageConnection; proc: ChildProcess; init: any; edits: any[]; progress: any[]; events: any[]; stderr: string[] };

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
  const s: Started = { proc, init: undefined, edits: [], progress: [], events: [], stderr: [], conn: undefined as any };
  proc.stderr!.on("data", (d) => s.stderr.push(String(d)));
  s.conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout!), new rpc.StreamMessageWriter(proc.stdin!));
  s.conn.onRequest("workspace/applyEdit", (p: any): { applied: boolean; failureReason?: string } => {
    s.edits.push(p);
    const review = Object.values(p.edit.changeAnnotations ?? {}).some((a: any) => a.needsConfirmation);
    return review ? { applied: false, failureReason: "rejected in review" } : { applied: true };
  });
  s.conn.onRequest("window/workDoneProgress/create", () => null);
  s.conn.onNotification("$/progress", (p) => void s.progress.push(p));
  s.conn.onNotification("agent/event", (e) => void s.events.push(e));
  s.conn.listen();
  const uri = pathToFileURL(root).href;
  s.init = await s.conn.sendRequest("initialize", {
    processId: process.pid,
    rootUri: uri,
    workspaceFolders: [{ uri, name: "sample" }],
    capabilities: {
      window: { workDoneProgress: true },
      workspace: { applyEdit: true, workspaceFolders: true, workspaceEdit: { documentChanges: true, resourceOperations: ["create"], changeAnnotationSupport: { groupsOnLabel: true } } },
    },
    initializationOptions: initializationOptions(settings),
  });
  await s.conn.sendNotification("initialized", {});
  return s;
}

async function stop(s: Started): Promise<void> {
  await s.conn.sendRequest("shutdown");
  await s.conn.sendNotification("exit");
  await new Promise((r) => (s.proc.exitCode !== null ? r(null) : s.proc.once("exit", r)));
  s.conn.dispose();
}

test("a scripted run through the extension's server options edits the open buffer with progress", { skip: missing && "set by scripts/test.sh" }, async () => {
  const root = join(dir, "sample");
  const settings: Settings = { ...defaultSettings, path: bin!, storePath: join(dir, "sessions.db") };
  const s = await startServer(settings, root);
  try {
    const greet = join(root, "greet.go");
    await s.conn.sendNotification("textDocument/didOpen", {
      textDocument: { uri: pathToFileURL(greet).href, languageId: "go", version: 7, text: readFileSync(greet, "utf8") },
    });
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
    const mine = s.progress.filter((p) => p.token === "vscode-1").map((p) => p.value);
    assert.equal(mine[0].kind, "begin");
    assert.match(mine[0].title, /^agent: Add a Farewell function/);
    assert.equal(mine[0].cancellable, true);
    assert.ok(mine.some((v) => v.kind === "report" && /edit_file/.test(v.message)), JSON.stringify(mine));
    assert.equal(mine.at(-1).kind, "end");
    const types = s.events.map((e) => e.type);
    for (const t of ["run.start", "tool.start", "edit", "run.end"]) assert.ok(types.includes(t), `agent/event ${t} in ${types}`);
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
    assert.equal(item.detail, `${root} · build: go build ./... · test: go test ./... · ${sandboxSummary(projects[0].sandbox)}`);
    assert.match(sandboxSummary(projects[0].sandbox), /^(sandbox workspace-write · |not sandboxed: )/);
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
